-- The detected loops of the runs in scope (run_loops: loops_core.sql run by the writer over the
-- traces each commit touches), as the CTE loop_rows of the loop questions.
SELECT trace_id, run_id, agent, started_at, tool, kind, args_hash, count, first_step, first_at, wasted_tokens,
       coalesce(scope, 'run') AS scope, session_id, no_progress
FROM run_loops
WHERE ($agent::VARCHAR IS NULL OR agent = $agent)
  AND ($service::VARCHAR IS NULL OR service = $service)
  AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
  AND ($until::TIMESTAMP IS NULL OR started_at < $until)
