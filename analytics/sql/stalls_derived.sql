-- The stall facts of the runs in the window, as the CTE members of stalls.sql
-- (run_members: stalls_members.sql run by the writer over the traces each commit touches).
SELECT trace_id, run_id, span_id, agent, started_at, span_type, what, call_ms, backoff_ms, gap_ms, at_ms
FROM run_members
WHERE ($agent::VARCHAR IS NULL OR agent = $agent)
  AND ($service::VARCHAR IS NULL OR service = $service)
  AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
  AND ($until::TIMESTAMP IS NULL OR started_at < $until)
