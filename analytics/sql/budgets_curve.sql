-- ctes: loop_rows=loops_derived, runs=budget_runs, step_rows=budget_step_totals
-- The budget advisor's replay (docs/budgets.md): for each group (agent[, service]), budget kind and
-- candidate value c, what a budget of c would have done to the stored runs.
-- A run is cut when its total exceeds c; a step is not run (its tokens are saved) when the figure
-- it starts from exceeds c: its ordinal for steps (max_steps = c runs c steps), the tool calls,
-- tokens or ms spent before it for the others (the step that crosses c is the run's last).
-- Every figure x (a run's total, a step's figure, both whole numbers: seconds as ms rounded up)
-- is put on the grid G = 0..20, 25 30 40 50 60 80, then 100 120 150 200 250 300 400 500 600 800
-- -- times 10^k: b(x) = the smallest value of G >= x (u = 10^(digits of x - 2), x / u in [10, 100);
-- a figure is taken as at most 10^17, far past any run's).
-- For c in G, x > c exactly when b(x) > c, so the answer at c is a sum over the buckets above c,
-- and the curve only changes at buckets that hold a figure that counts (a run's total, a bad run's
-- step): those are the candidates (and 1 for steps and tool calls).
WITH stepped AS (
    SELECT r.agent, r.service, r.outcome = 'looped' AS looped, s.tokens, s.cost_usd, least(s.ordinal, r.steps) AS by_steps,
           least(s.calls_before, r.tool_calls) AS by_calls,
           least(CAST(ceil(s.start_ms) AS BIGINT), CAST(ceil(r.duration_ns / 1000000.0) AS BIGINT)) AS by_ms,
           least(s.tokens_before, r.tokens) AS by_tokens
    FROM step_rows s JOIN runs r ON r.trace_id = s.trace_id AND r.run_id = s.run_id
    -- only bad runs' steps move a count (tokens saved, steps avoided); an ok run counts by its total
    WHERE r.outcome IN ('looped', 'budget', 'failed')
),
totals AS (
    SELECT agent, service, CAST(outcome = 'ok' AS BIGINT) AS ok, CAST(outcome IN ('looped', 'budget', 'failed') AS BIGINT) AS bad,
           CAST(outcome = 'looped' AS BIGINT) AS looped, steps, tool_calls,
           CAST(ceil(duration_ns / 1000000.0) AS BIGINT) AS ms, tokens
    FROM runs
),
-- kind: 1 steps, 2 tool_calls, 3 seconds (in ms), 4 tokens; weights: runs cut (ok, bad, looped), tokens,
-- looped steps, the step's cost (NULL: unpriced)
figures AS (
    SELECT agent, service, 1 AS kind, steps AS x, ok, bad, looped, 0 AS tokens, 0 AS steps,
           CAST(NULL AS DOUBLE) AS cost, 0 AS is_step FROM totals
    UNION ALL
    SELECT agent, service, 2, tool_calls, ok, bad, looped, 0, 0, NULL, 0 FROM totals
    UNION ALL
    SELECT agent, service, 3, ms, ok, bad, looped, 0, 0, NULL, 0 FROM totals
    UNION ALL
    SELECT agent, service, 4, tokens, ok, bad, looped, 0, 0, NULL, 0 FROM totals
    UNION ALL
    SELECT agent, service, 1, by_steps, 0, 0, 0, tokens, CAST(looped AS BIGINT), cost_usd, 1 FROM stepped
    UNION ALL
    SELECT agent, service, 2, by_calls, 0, 0, 0, tokens, CAST(looped AS BIGINT), cost_usd, 1 FROM stepped
    UNION ALL
    SELECT agent, service, 3, by_ms, 0, 0, 0, tokens, CAST(looped AS BIGINT), cost_usd, 1 FROM stepped
    UNION ALL
    SELECT agent, service, 4, by_tokens, 0, 0, 0, tokens, CAST(looped AS BIGINT), cost_usd, 1 FROM stepped
    UNION ALL
    -- a budget of 1 is always a candidate for the counted kinds (an agent that never calls a tool)
    SELECT DISTINCT agent, service, 1, 1, 0, 0, 0, 0, 0, NULL, 0 FROM totals
    UNION ALL
    SELECT DISTINCT agent, service, 2, 1, 0, 0, 0, 0, 0, NULL, 0 FROM totals
),
scaled AS (
    SELECT agent, service, kind, least(x, CAST(100000000000000000 AS BIGINT)) AS x, ok, bad, looped, tokens, steps, cost, is_step
    FROM figures
),
digits AS (
    SELECT *,
           CAST(CASE WHEN x < 100 THEN 1 WHEN x < 1000 THEN 10 WHEN x < 10000 THEN 100 WHEN x < 100000 THEN 1000
                WHEN x < 1000000 THEN 10000 WHEN x < 10000000 THEN 100000 WHEN x < 100000000 THEN 1000000
                WHEN x < 1000000000 THEN 10000000 WHEN x < 10000000000 THEN 100000000
                WHEN x < 100000000000 THEN 1000000000 WHEN x < 1000000000000 THEN 10000000000
                WHEN x < 10000000000000 THEN 100000000000 WHEN x < 100000000000000 THEN 1000000000000
                WHEN x < 1000000000000000 THEN 10000000000000 WHEN x < 10000000000000000 THEN 100000000000000
                ELSE 1000000000000000 END AS BIGINT) AS u
    FROM scaled
),
buckets AS (
    SELECT agent, service, kind,
           CASE WHEN x <= 20 THEN x
                WHEN x <= 10 * u THEN 10 * u WHEN x <= 12 * u THEN 12 * u WHEN x <= 15 * u THEN 15 * u
                WHEN x <= 20 * u THEN 20 * u WHEN x <= 25 * u THEN 25 * u WHEN x <= 30 * u THEN 30 * u
                WHEN x <= 40 * u THEN 40 * u WHEN x <= 50 * u THEN 50 * u WHEN x <= 60 * u THEN 60 * u
                WHEN x <= 80 * u THEN 80 * u ELSE 100 * u
           END AS b,
           sum(ok) AS ok_runs, sum(bad) AS bad_runs, sum(looped) AS looped_runs,
           sum(tokens) AS bad_tokens, sum(steps) AS looped_steps,
           sum(cost) AS bad_cost, count(cost) AS priced_steps, sum(is_step) AS bad_steps
    FROM digits
    GROUP BY agent, service, kind, b
)
SELECT agent, service,
       CASE kind WHEN 1 THEN 'steps' WHEN 2 THEN 'tool_calls' WHEN 3 THEN 'seconds' ELSE 'tokens' END AS kind,
       b AS value,
       coalesce(sum(ok_runs) OVER above, 0) AS ok_runs_cut,
       coalesce(sum(bad_runs) OVER above, 0) AS bad_runs_cut,
       coalesce(sum(bad_tokens) OVER above, 0) AS tokens_saved,
       coalesce(sum(looped_runs) OVER above, 0) AS looped_runs_cut,
       coalesce(sum(looped_steps) OVER above, 0) AS looped_steps_avoided,
       -- money: the cost of the bad runs' steps not run (0 with no bad run); NULL when none of them is priced
       CASE WHEN sum(priced_steps) OVER whole > 0 OR sum(bad_steps) OVER whole = 0
            THEN round(coalesce(sum(bad_cost) OVER above, 0), 9) END AS cost_saved_usd
FROM buckets
WHERE b >= 1
WINDOW above AS (PARTITION BY agent, service, kind ORDER BY b DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
       whole AS (PARTITION BY agent, service, kind)
ORDER BY agent, service, kind, value
