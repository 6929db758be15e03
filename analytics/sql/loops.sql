-- /api/v1/loops: the loops of the runs in scope, newest run first (loop_rows = loops_derived.sql).
SELECT trace_id, run_id, agent, started_at, tool, kind, count, first_step, wasted_tokens, scope, session_id, no_progress
FROM loop_rows
WHERE $kind::VARCHAR IS NULL OR kind = $kind
ORDER BY started_at DESC, trace_id, run_id, first_step, kind, tool, scope
LIMIT $limit
