-- Per run input / output / wasted tokens, most tokens first (loop_rows = loops_core.sql).
WITH runs AS (
    SELECT "TraceId" AS trace_id, run_id, agent, "Timestamp" AS started_at
    FROM spans
    WHERE span_type = 'agent' AND "SpanId" = run_id
      AND ($agent::VARCHAR IS NULL OR agent = $agent)
      AND ($service::VARCHAR IS NULL OR "ServiceName" = $service)
      AND ($since::TIMESTAMP IS NULL OR "Timestamp" >= $since)
      AND ($until::TIMESTAMP IS NULL OR "Timestamp" < $until)
),
totals AS (
    SELECT r.trace_id, r.run_id, r.agent, r.started_at,
           coalesce(sum(s.input_tokens), 0) AS input_tokens, coalesce(sum(s.output_tokens), 0) AS output_tokens
    FROM runs r
    LEFT JOIN spans s ON s."TraceId" = r.trace_id AND s.run_id = r.run_id AND s.span_type = 'llm'
    GROUP BY r.trace_id, r.run_id, r.agent, r.started_at
),
wasted AS (
    -- the earliest loop of a run wastes the most: everything after it began
    SELECT trace_id, run_id, max(wasted_tokens) AS wasted_tokens FROM loop_rows GROUP BY trace_id, run_id
)
SELECT t.trace_id, t.run_id, t.agent, t.input_tokens, t.output_tokens, coalesce(w.wasted_tokens, 0) AS wasted_tokens
FROM totals t
LEFT JOIN wasted w ON w.trace_id = t.trace_id AND w.run_id = t.run_id
ORDER BY t.input_tokens + t.output_tokens DESC, t.started_at DESC, t.trace_id
LIMIT $limit
