-- ctes: priced=priced_calls
-- Per step of every run in scope, the figures before it (run_step_totals: step_totals.sql run by the
-- writer over the traces each commit touches) and what its model calls cost (priced_calls.sql; NULL
-- when none is priced), as the CTE step_rows of the budget questions.
WITH step_costs AS (
    SELECT trace_id, run_id, step, sum(cost_usd) AS cost_usd
    FROM priced
    WHERE step IS NOT NULL
    GROUP BY trace_id, run_id, step
)
SELECT t.trace_id, t.run_id, t.step, t.ordinal, t.tokens,
       t.cum_tool_calls - t.tool_calls AS calls_before, t.cum_tokens - t.tokens AS tokens_before, t.start_ms,
       k.cost_usd
FROM run_step_totals t
LEFT JOIN step_costs k ON k.trace_id = t.trace_id AND k.run_id = t.run_id AND k.step = t.step
WHERE ($agent::VARCHAR IS NULL OR t.agent = $agent)
  AND ($service::VARCHAR IS NULL OR t.service = $service)
  AND ($since::TIMESTAMP IS NULL OR t.started_at >= $since)
  AND ($until::TIMESTAMP IS NULL OR t.started_at < $until)
