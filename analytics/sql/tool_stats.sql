-- Tool calls: count, failures (StatusCode Error) by error class, retries, latency percentiles.
-- A call belongs to the agent of its run (sub-agent calls count for the enclosing run's agent).
-- Time filters apply to the tool span's start; $by_agent splits the rows per agent.
WITH calls AS (
    SELECT t.tool,
           coalesce(r.agent, t.agent) AS agent,
           t."StatusCode" = 'Error' AS failed,
           t.error_class,
           greatest(coalesce(t.attempts, 1) - 1, 0) AS retries,
           t."Duration"
    FROM spans t
    LEFT JOIN (
        -- Read the runs only when the agent matters (filter or grouping).
        SELECT trace_id, run_id, agent FROM run_facts WHERE $by_agent::BOOLEAN OR $agent::VARCHAR IS NOT NULL
    ) r ON r.trace_id = t."TraceId" AND r.run_id = t.run_id
    WHERE t.span_type = 'tool'
      AND ($since::TIMESTAMP IS NULL OR t."Timestamp" >= $since)
      AND ($until::TIMESTAMP IS NULL OR t."Timestamp" < $until)
      AND ($service::VARCHAR IS NULL OR t."ServiceName" = $service)
      AND ($agent::VARCHAR IS NULL OR coalesce(r.agent, t.agent) = $agent)
      AND ($tool::VARCHAR IS NULL OR t.tool = $tool)
)
SELECT tool,
       CASE WHEN $by_agent THEN agent END AS agent,
       count(*) AS calls,
       count(*) FILTER (WHERE failed) AS errors,
       count(*) FILTER (WHERE failed) / count(*) AS fail_rate,
       coalesce(histogram(coalesce(error_class, 'unclassified')) FILTER (WHERE failed), MAP {}) AS errors_by_class,
       sum(retries) AS retries,
       round(quantile_cont("Duration", 0.5) / 1e6, 3) AS p50_ms,
       round(quantile_cont("Duration", 0.95) / 1e6, 3) AS p95_ms
FROM calls
GROUP BY tool, CASE WHEN $by_agent THEN agent END
ORDER BY calls DESC, tool, agent
