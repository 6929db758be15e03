-- ctes: loop_rows=loops_derived, runs=budget_runs
-- Per group (agent[, service]) and outcome (budget_runs.sql): how many runs, their tokens and cost,
-- and the distribution of each budget figure and of the runs' cost (quantiles interpolated linearly,
-- seconds from the run's duration; a run's cost is its model calls priced, as stored (budget_runs.sql
-- from run_facts; priced_calls.sql), NULL when none is priced: left out of the cost
-- quantiles, never counted as $0).
SELECT agent, service, outcome, count(*) AS runs, sum(tokens) AS tokens, round(sum(cost_usd), 9) AS cost_usd,
       round(quantile_cont(steps, 0.5), 6) AS steps_p50, round(quantile_cont(steps, 0.9), 6) AS steps_p90,
       round(quantile_cont(steps, 0.99), 6) AS steps_p99, max(steps) AS steps_max,
       round(quantile_cont(tool_calls, 0.5), 6) AS tool_calls_p50, round(quantile_cont(tool_calls, 0.9), 6) AS tool_calls_p90,
       round(quantile_cont(tool_calls, 0.99), 6) AS tool_calls_p99, max(tool_calls) AS tool_calls_max,
       round(quantile_cont(duration_ns / 1e9, 0.5), 6) AS seconds_p50, round(quantile_cont(duration_ns / 1e9, 0.9), 6) AS seconds_p90,
       round(quantile_cont(duration_ns / 1e9, 0.99), 6) AS seconds_p99, max(duration_ns / 1e9) AS seconds_max,
       round(quantile_cont(tokens, 0.5), 6) AS tokens_p50, round(quantile_cont(tokens, 0.9), 6) AS tokens_p90,
       round(quantile_cont(tokens, 0.99), 6) AS tokens_p99, max(tokens) AS tokens_max,
       round(quantile_cont(cost_usd, 0.5), 9) AS cost_p50, round(quantile_cont(cost_usd, 0.9), 9) AS cost_p90,
       round(quantile_cont(cost_usd, 0.99), 9) AS cost_p99, round(max(cost_usd), 9) AS cost_max
FROM runs
GROUP BY agent, service, outcome
ORDER BY agent, service, outcome
