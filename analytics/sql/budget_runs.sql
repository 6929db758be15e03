-- The runs in scope of the budget advisor (docs/budgets.md), one row per run, as the CTE runs of
-- the budget questions (loop_rows = loops_derived.sql): its group (agent, and service when
-- $by_service), its outcome, the four figures a budget bounds and its stored cost (NULL: none priced).
-- outcome: 'ok' (vocabulary RUN_OK: completed, not failed), else 'looped' (a detected loop or
-- stopped by the loop guard), else 'budget' (stopped by a step, tool-call, time or token budget),
-- else 'other' when cancelled (the user left; the decorators give such a run status Error), else
-- 'failed' (status Error, or ended by an error), else 'other'.
WITH looped AS (
    SELECT trace_id, run_id, min(first_step) AS loop_first_step FROM loop_rows GROUP BY trace_id, run_id
)
SELECT f.trace_id, f.run_id, f.agent,
       CASE WHEN $by_service::BOOLEAN THEN f.service END AS service,
       f.started_at,
       CASE WHEN f.ok THEN 'ok'
            WHEN l.run_id IS NOT NULL OR f.termination_reason = 'loop_detected' THEN 'looped'
            WHEN f.termination_reason IN ('max_steps', 'max_tool_calls', 'timeout', 'token_budget') THEN 'budget'
            WHEN f.termination_reason = 'cancelled' THEN 'other'
            WHEN f.status_code = 'Error' OR f.termination_reason IN ('error', 'fatal_error', 'repeated_error') THEN 'failed'
            ELSE 'other'
       END AS outcome,
       l.loop_first_step,
       f.steps, f.tool_calls, greatest(coalesce(f.duration, 0), 0) AS duration_ns,
       f.input_tokens + f.output_tokens AS tokens, f.cost_usd
FROM run_facts f
LEFT JOIN looped l ON l.trace_id = f.trace_id AND l.run_id = f.run_id
WHERE ($agent::VARCHAR IS NULL OR f.agent = $agent)
  AND ($service::VARCHAR IS NULL OR f.service = $service)
  AND ($since::TIMESTAMP IS NULL OR f.started_at >= $since)
  AND ($until::TIMESTAMP IS NULL OR f.started_at < $until)
