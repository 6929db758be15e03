-- The runs whose loops are found one run at a time (run scope): each run its own sequence of calls.
-- Read by loops_core.sql as the CTE runs: rk is the key its calls are grouped by.
SELECT trace_id, run_id, agent, service, started_at, session_id, hash(trace_id, run_id) AS rk, 'run' AS scope
FROM run_facts
WHERE ($agent::VARCHAR IS NULL OR agent = $agent)
  AND ($service::VARCHAR IS NULL OR service = $service)
  AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
  AND ($until::TIMESTAMP IS NULL OR started_at < $until)
  -- only runs with spans in scope (a derivation's scope is a few traces: not every stored run)
  AND trace_id IN (SELECT DISTINCT "TraceId" FROM spans)
