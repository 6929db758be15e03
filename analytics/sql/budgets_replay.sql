-- ctes: loop_rows=loops_derived, runs=budget_runs, step_rows=budget_step_totals
-- One budget ($kind, $value in its unit: seconds for 'seconds') replayed over each run in scope, by
-- the rule of budgets_curve.sql: the run is cut when its total exceeds the value; a step runs when the
-- figure it starts from does not (its ordinal for steps; tool calls, tokens or seconds before it).
-- steps_kept: the steps that would have begun; last_step: the step number of the last of them (the
-- one the budget stops the run at); tokens_saved: the tokens of the steps that would not have run,
-- cost_saved_usd what they cost (0 for a run not cut; NULL when none of a cut run's steps is priced).
WITH figures AS (
    SELECT trace_id, run_id, outcome, loop_first_step, started_at, steps, tokens,
           CASE $kind::VARCHAR WHEN 'steps' THEN CAST(steps AS DOUBLE) WHEN 'tool_calls' THEN CAST(tool_calls AS DOUBLE)
                WHEN 'tokens' THEN CAST(tokens AS DOUBLE) ELSE duration_ns / 1e9 END AS total
    FROM runs
),
replayed AS (
    SELECT s.trace_id, s.run_id,
           count(*) FILTER (WHERE s.starts_at <= $value::DOUBLE) AS steps_kept,
           max(s.step) FILTER (WHERE s.starts_at <= $value::DOUBLE) AS last_step,
           coalesce(sum(s.tokens) FILTER (WHERE s.starts_at > $value::DOUBLE), 0) AS tokens_saved,
           sum(s.cost_usd) FILTER (WHERE s.starts_at > $value::DOUBLE) AS cost_saved, count(s.cost_usd) AS priced_steps
    FROM (
        SELECT trace_id, run_id, step, tokens, cost_usd,
               CASE $kind::VARCHAR WHEN 'steps' THEN CAST(ordinal AS DOUBLE) WHEN 'tool_calls' THEN CAST(calls_before AS DOUBLE)
                    WHEN 'tokens' THEN CAST(tokens_before AS DOUBLE) ELSE start_ms / 1000.0 END AS starts_at
        FROM step_rows
    ) s
    GROUP BY s.trace_id, s.run_id
)
SELECT f.trace_id, f.run_id, f.outcome, f.total, CAST(f.total > $value::DOUBLE AS BOOLEAN) AS cut,  -- cast: ClickHouse answers 0 / 1
       f.steps, CASE WHEN f.total > $value::DOUBLE THEN coalesce(r.steps_kept, 0) ELSE f.steps END AS steps_kept,
       CASE WHEN f.total > $value::DOUBLE THEN r.last_step END AS last_step,
       f.loop_first_step, f.tokens,
       CASE WHEN f.total > $value::DOUBLE THEN coalesce(r.tokens_saved, 0) ELSE 0 END AS tokens_saved,
       CASE WHEN f.total <= $value::DOUBLE THEN 0
            WHEN r.priced_steps > 0 THEN round(coalesce(r.cost_saved, 0), 9) END AS cost_saved_usd
FROM figures f
LEFT JOIN replayed r ON r.trace_id = f.trace_id AND r.run_id = f.run_id
WHERE NOT $only_cut::BOOLEAN OR f.total > $value::DOUBLE
ORDER BY f.total > $value::DOUBLE DESC, tokens_saved DESC, f.started_at DESC, f.trace_id, f.run_id
LIMIT $limit
