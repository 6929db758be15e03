-- ctes: costs=loop_costs
-- What the window's loops wasted, each looping run once (loop_rows = loops_derived.sql, $kind when
-- given): per run the tokens spent from its earliest loop's first call on (its loops' largest
-- wasted_tokens, as burn_runs.sql counts it) and what they cost (loop_costs.sql; a run with nothing
-- wasted cost 0, an unpriced one NULL: left out of the sum, counted apart).
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
)
SELECT count(*) AS looping_runs, coalesce(sum(wasted_tokens), 0) AS wasted_tokens,
       round(sum(wasted_cost_usd), 9) AS wasted_cost_usd, count(*) - count(wasted_cost_usd) AS unpriced_runs
FROM priced
