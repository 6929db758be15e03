-- KPI tiles for the current window [$since, $until) and the previous one [$previous_since, $since),
-- over the runs that started in each. Status rule as in runs.sql.
WITH runs AS (
    SELECT r."TraceId", r."SpanId", r."Duration",
           r."Timestamp" >= $since AS current,
           r.termination_reason = 'completed' AND r."StatusCode" <> 'Error' AS ok
    FROM spans r
    WHERE r.span_type = 'agent' AND r."SpanId" = r.run_id
      AND r."Timestamp" >= $previous_since AND r."Timestamp" < $until
      AND ($agent::VARCHAR IS NULL OR r.agent = $agent)
      AND ($service::VARCHAR IS NULL OR r."ServiceName" = $service)
),
children AS (
    SELECT s."TraceId", s.run_id,
           coalesce(sum(coalesce(s.input_tokens, 0) + coalesce(s.output_tokens, 0)) FILTER (WHERE s.span_type = 'llm'), 0) AS tokens,
           count(*) FILTER (WHERE s.span_type = 'tool') AS tool_calls,
           count(*) FILTER (WHERE s.span_type = 'tool' AND s."StatusCode" = 'Error') AS tool_errors,
           bool_or(s.loop_kind IS NOT NULL) AS looped
    FROM spans s
    -- Summed per run before the join to the runs in scope (the join probes runs, not calls).
    WHERE s.span_type IN ('llm', 'tool')
      -- A call starts after its run did (5 min of clock skew allowed): lets old row groups be skipped.
      AND s."Timestamp" >= $previous_since::TIMESTAMP - INTERVAL 5 MINUTE
    GROUP BY s."TraceId", s.run_id
)
SELECT r.current,
       count(*) AS runs,
       count(*) FILTER (WHERE r.ok) AS ok_runs,
       coalesce(sum(c.tokens) FILTER (WHERE r.ok), 0) AS ok_tokens,
       coalesce(sum(c.tool_calls), 0) AS tool_calls,
       coalesce(sum(c.tool_errors), 0) AS tool_errors,
       count(*) FILTER (WHERE c.looped) AS looped_runs,
       quantile_cont(r."Duration", 0.95) / 1e6 AS p95_duration_ms
FROM runs r
LEFT JOIN children c ON c."TraceId" = r."TraceId" AND c.run_id = r."SpanId"
GROUP BY r.current
