-- ctes: runs=run_spans
-- ClickHouse variant of ../stalls_first_tool.sql.
WITH first_tool AS (
    SELECT r.agent AS agent, dateDiff('microsecond', r.started_at, min(s.Timestamp)) / 1e3 AS ms
    FROM runs r
    JOIN (SELECT TraceId, run_id, Timestamp FROM typed_spans WHERE span_type = 'tool') s ON s.TraceId = r.trace_id AND s.run_id = r.run_id
    GROUP BY r.trace_id, r.run_id, r.agent, r.started_at
)
SELECT agent, count() AS runs,
       round(quantileExactInclusive(0.5)(ms), 3) AS p50_ms,
       round(quantileExactInclusive(0.95)(ms), 3) AS p95_ms,
       round(max(ms), 3) AS max_ms
FROM first_tool
GROUP BY agent
ORDER BY p95_ms DESC, agent
