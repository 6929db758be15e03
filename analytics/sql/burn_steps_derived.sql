-- Input tokens per step of every run in scope, as the CTE burn_steps of the burn questions
-- (run_steps: burn_steps.sql run by the writer over the traces each commit touches).
SELECT trace_id, run_id, agent, step, input_tokens
FROM run_steps
WHERE ($agent::VARCHAR IS NULL OR agent = $agent)
  AND ($service::VARCHAR IS NULL OR service = $service)
  AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
  AND ($until::TIMESTAMP IS NULL OR started_at < $until)
