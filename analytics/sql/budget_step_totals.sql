-- Per step of every run in scope, the figures before it (run_step_totals: step_totals.sql run by the
-- writer over the traces each commit touches), as the CTE step_rows of the budget questions.
SELECT trace_id, run_id, step, ordinal, tokens,
       cum_tool_calls - tool_calls AS calls_before, cum_tokens - tokens AS tokens_before, start_ms
FROM run_step_totals
WHERE ($agent::VARCHAR IS NULL OR agent = $agent)
  AND ($service::VARCHAR IS NULL OR service = $service)
  AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
  AND ($until::TIMESTAMP IS NULL OR started_at < $until)
