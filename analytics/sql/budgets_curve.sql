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
    SELECT r.agent, r.service, r.outcome, s.tokens, least(s.ordinal, r.steps) AS by_steps,
           least(s.calls_before, r.tool_calls) AS by_calls,
           least(CAST(ceil(s.start_ms) AS BIGINT), CAST(ceil(r.duration_ns / 1000000.0) AS BIGINT)) AS by_ms,
           least(s.tokens_before, r.tokens) AS by_tokens
    FROM step_rows s JOIN runs r ON r.trace_id = s.trace_id AND r.run_id = s.run_id
    -- only bad runs' steps move a count (tokens saved, steps avoided); an ok run counts by its total
    WHERE r.outcome IN ('looped', 'budget', 'failed')
),
figures AS (
    SELECT agent, service, outcome, 'steps' AS kind, steps AS x, 1 AS runs, 0 AS tokens, 0 AS steps FROM runs
    UNION ALL
    SELECT agent, service, outcome, 'tool_calls', tool_calls, 1, 0, 0 FROM runs
    UNION ALL
    SELECT agent, service, outcome, 'seconds', CAST(ceil(duration_ns / 1000000.0) AS BIGINT), 1, 0, 0 FROM runs
    UNION ALL
    SELECT agent, service, outcome, 'tokens', tokens, 1, 0, 0 FROM runs
    UNION ALL
    SELECT agent, service, outcome, 'steps', by_steps, 0, tokens, 1 FROM stepped
    UNION ALL
    SELECT agent, service, outcome, 'tool_calls', by_calls, 0, tokens, 1 FROM stepped
    UNION ALL
    SELECT agent, service, outcome, 'seconds', by_ms, 0, tokens, 1 FROM stepped
    UNION ALL
    SELECT agent, service, outcome, 'tokens', by_tokens, 0, tokens, 1 FROM stepped
    UNION ALL
    -- a budget of 1 is always a candidate for the counted kinds (an agent that never calls a tool)
    SELECT DISTINCT agent, service, 'none', 'steps', 1, 0, 0, 0 FROM runs
    UNION ALL
    SELECT DISTINCT agent, service, 'none', 'tool_calls', 1, 0, 0, 0 FROM runs
),
scaled AS (
    SELECT agent, service, outcome, kind, least(x, CAST(100000000000000000 AS BIGINT)) AS x, runs, tokens, steps
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
           sum(runs) FILTER (WHERE outcome = 'ok') AS ok_runs,
           sum(runs) FILTER (WHERE outcome IN ('looped', 'budget', 'failed')) AS bad_runs,
           sum(runs) FILTER (WHERE outcome = 'looped') AS looped_runs,
           sum(tokens) FILTER (WHERE outcome IN ('looped', 'budget', 'failed')) AS bad_tokens,
           sum(steps) FILTER (WHERE outcome = 'looped') AS looped_steps
    FROM digits
    GROUP BY agent, service, kind, b
)
SELECT agent, service, kind, b AS value,
       coalesce(sum(ok_runs) OVER above, 0) AS ok_runs_cut,
       coalesce(sum(bad_runs) OVER above, 0) AS bad_runs_cut,
       coalesce(sum(bad_tokens) OVER above, 0) AS tokens_saved,
       coalesce(sum(looped_runs) OVER above, 0) AS looped_runs_cut,
       coalesce(sum(looped_steps) OVER above, 0) AS looped_steps_avoided,
       -- money: the cost of the steps not run, once steps are priced (left NULL until then)
       CAST(NULL AS DOUBLE) AS cost_saved_usd
FROM buckets
WHERE b >= 1
WINDOW above AS (PARTITION BY agent, service, kind ORDER BY b DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
ORDER BY agent, service, kind, value
