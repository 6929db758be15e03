-- The loops detected in the runs of one trace (run_loops: loops_core.sql, kept by the derivation),
-- in the order their first call came; a loop across a session's runs is on the run of its last call.
SELECT run_id, kind, tool, count, first_step, wasted_tokens, coalesce(scope, 'run') AS scope, no_progress
FROM run_loops
WHERE trace_id = $trace_id
ORDER BY run_id, first_at, kind, tool
