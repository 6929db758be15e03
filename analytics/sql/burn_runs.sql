-- Per run input / output / wasted tokens, most tokens first (run_facts; loop_rows = loops_derived.sql).
WITH wasted AS (
    -- the earliest loop of a run wastes the most: everything after it began
    SELECT trace_id, run_id, max(wasted_tokens) AS wasted_tokens FROM loop_rows GROUP BY trace_id, run_id
)
SELECT t.trace_id, t.run_id, t.agent, t.input_tokens, t.output_tokens, coalesce(w.wasted_tokens, 0) AS wasted_tokens
FROM run_facts t
LEFT JOIN wasted w ON w.trace_id = t.trace_id AND w.run_id = t.run_id
WHERE ($agent::VARCHAR IS NULL OR t.agent = $agent)
  AND ($service::VARCHAR IS NULL OR t.service = $service)
  AND ($since::TIMESTAMP IS NULL OR t.started_at >= $since)
  AND ($until::TIMESTAMP IS NULL OR t.started_at < $until)
ORDER BY t.input_tokens + t.output_tokens DESC, t.started_at DESC, t.trace_id
LIMIT $limit
