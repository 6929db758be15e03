-- Per run growth-fit sums of the runs in scope, as the CTE growth_rows of burn_agents.sql
-- (run_growth: burn_growth.sql run by the writer over the steps of the runs each commit touches).
SELECT trace_id, run_id, agent, points, sxx, sxy, syy
FROM run_growth
WHERE ($agent::VARCHAR IS NULL OR agent = $agent)
  AND ($service::VARCHAR IS NULL OR service = $service)
  AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
  AND ($until::TIMESTAMP IS NULL OR started_at < $until)
