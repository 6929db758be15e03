-- Per agent: the growth exponent k of input tokens per step and the token totals by outcome.
-- k is fitted by least squares on log(input(s) - input(first step)) = c_run + k * log(s - first step)
-- with one intercept per run (the within-run estimator), so a constant prompt does not bend a
-- linear history replay below 1. burn_steps = burn_steps_derived.sql; run totals from run_facts.
WITH growth AS (
    -- runs are partitioned by a 64-bit hash of their ids: windows sort integers, not strings
    SELECT trace_id, run_id, hash(trace_id, run_id) AS rk, agent,
           step - first_value(step) OVER r AS x,
           input_tokens - first_value(input_tokens) OVER r AS y
    FROM burn_steps
    WINDOW r AS (PARTITION BY hash(trace_id, run_id) ORDER BY step)
),
points AS (
    SELECT trace_id, run_id, rk, agent, ln(x) AS lx, ln(y) AS ly
    FROM growth
    WHERE x >= 1 AND y > 0
),
centred AS MATERIALIZED (
    SELECT agent, trace_id, run_id, rk,
           lx - avg(lx) OVER r AS dx, ly - avg(ly) OVER r AS dy, count(*) OVER r AS n_run
    FROM points
    WINDOW r AS (PARTITION BY rk)
),
fit AS (
    SELECT agent, sum(dx * dy) / nullif(sum(dx * dx), 0) AS k, sum(dx * dx) AS sxx,
           count(*) AS n, count(DISTINCT rk) AS fit_runs
    FROM centred
    WHERE n_run >= 2
    GROUP BY agent
),
fit_se AS (
    SELECT f.agent, f.k, f.n, f.fit_runs,
           sqrt(sum((c.dy - f.k * c.dx) ^ 2) / greatest(f.n - f.fit_runs - 1, 1) / f.sxx) AS se
    FROM fit f JOIN centred c ON c.agent = f.agent AND c.n_run >= 2
    WHERE f.k IS NOT NULL
    GROUP BY f.agent, f.k, f.n, f.fit_runs, f.sxx
),
tokens AS (
    -- NULL (no termination reason) is neither a success nor a failure here
    SELECT agent, termination_reason = 'completed' AND status_code <> 'Error' AS ok, input_tokens + output_tokens AS tokens
    FROM run_facts
    WHERE ($agent::VARCHAR IS NULL OR agent = $agent)
      AND ($service::VARCHAR IS NULL OR service = $service)
      AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
      AND ($until::TIMESTAMP IS NULL OR started_at < $until)
),
totals AS (
    SELECT agent, count(*) AS runs,
           sum(tokens) FILTER (WHERE ok) / nullif(count(*) FILTER (WHERE ok), 0) AS tokens_per_success,
           coalesce(sum(tokens) FILTER (WHERE NOT ok), 0) AS tokens_on_failures
    FROM tokens
    GROUP BY agent
)
SELECT t.agent, t.runs,
       round(f.k, 4) AS growth_exponent,
       coalesce(f.k >= $superlinear_k AND f.k - 2 * f.se > 1 AND f.fit_runs >= $min_runs AND f.n >= $min_points, false) AS superlinear,
       round(t.tokens_per_success, 1) AS tokens_per_success,
       t.tokens_on_failures,
       round(f.se, 4) AS growth_exponent_se,
       coalesce(f.n, 0) AS fit_points
FROM totals t
LEFT JOIN fit_se f ON f.agent = t.agent
ORDER BY t.agent
