-- Time from a run's start to its first tool call, per agent (runs with no tool call are left out).
WITH runs AS (
    SELECT "TraceId" AS trace_id, run_id, agent, "Timestamp" AS started_at
    FROM spans
    WHERE span_type = 'agent' AND "SpanId" = run_id
      AND ($agent::VARCHAR IS NULL OR agent = $agent)
      AND ($service::VARCHAR IS NULL OR "ServiceName" = $service)
      AND ($since::TIMESTAMP IS NULL OR "Timestamp" >= $since)
      AND ($until::TIMESTAMP IS NULL OR "Timestamp" < $until)
),
first_tool AS (
    SELECT r.agent, date_diff('microsecond', r.started_at, min(s."Timestamp")) / 1e3 AS ms
    FROM runs r
    JOIN spans s ON s."TraceId" = r.trace_id AND s.run_id = r.run_id AND s.span_type = 'tool'
    GROUP BY r.trace_id, r.run_id, r.agent, r.started_at
)
SELECT agent, count(*) AS runs,
       round(quantile_cont(ms, 0.5), 3) AS p50_ms,
       round(quantile_cont(ms, 0.95), 3) AS p95_ms,
       round(max(ms), 3) AS max_ms
FROM first_tool
GROUP BY agent
ORDER BY p95_ms DESC, agent
