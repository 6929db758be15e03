-- ctes: costs=loop_costs, wasted=wasted_calls
-- What the window's loops wasted (loop_rows = loops_derived.sql, $kind when given): the looping runs,
-- and the tokens and cost of every model call a loop wasted, each call once (wasted_calls.sql: a
-- call wasted by a run's own loop and by its session's loop was counted twice as each looping
-- run's largest wasted_tokens). A looping run none of whose wasted calls is priced is counted
-- apart (its cost as loop_costs.sql prices it; nothing wasted costs 0).
WITH per_run AS (
    SELECT trace_id, run_id, max(wasted_tokens) AS wasted_tokens
    FROM loop_rows
    WHERE $kind::VARCHAR IS NULL OR kind = $kind
    GROUP BY trace_id, run_id
),
priced AS (
    SELECT r.wasted_tokens, CASE WHEN r.wasted_tokens = 0 THEN 0 ELSE c.wasted_cost_usd END AS wasted_cost_usd
    FROM per_run r
    LEFT JOIN costs c ON c.trace_id = r.trace_id AND c.run_id = r.run_id AND c.wasted_tokens = r.wasted_tokens
),
calls AS (
    SELECT sum(wasted_tokens) AS wasted_tokens, round(sum(wasted_cost_usd), 9) AS wasted_cost_usd FROM wasted
),
runs AS (
    SELECT count(*) AS looping_runs, count(*) - count(wasted_cost_usd) AS unpriced_runs FROM priced
)
SELECT r.looping_runs, coalesce(c.wasted_tokens, 0) AS wasted_tokens,
       CASE WHEN coalesce(c.wasted_tokens, 0) = 0 THEN 0 ELSE c.wasted_cost_usd END AS wasted_cost_usd, r.unpriced_runs
FROM runs r CROSS JOIN calls c
