-- Per agent: the growth exponent k of input tokens per step and the token totals by outcome.
-- k is fitted by least squares on log(input(s) - input(first step)) = c_run + k * log(s - first step)
-- with one intercept per run (the within-run estimator), so a constant prompt does not bend a
-- linear history replay below 1. growth_rows = each run's centred sums (burn_growth.sql, or the
-- table run_growth through burn_growth_derived.sql); run totals from run_facts.
WITH fit AS (
    SELECT agent, sum(sxy) / nullif(sum(sxx), 0) AS k, sum(sxx) AS sxx, sum(sxy) AS sxy, sum(syy) AS syy,
           sum(points) AS n, count(*) AS fit_runs
    FROM growth_rows
    GROUP BY agent
),
fit_se AS (
    -- the residual sum of squares from the per-run sums: sum((dy - k dx)^2) = syy - 2k sxy + k^2 sxx
    SELECT agent, k, n, fit_runs,
           sqrt(greatest(syy - 2 * k * sxy + k * k * sxx, 0) / greatest(n - fit_runs - 1, 1) / sxx) AS se
    FROM fit
    WHERE k IS NOT NULL
),
tokens AS (
    SELECT agent, ok, input_tokens + output_tokens AS tokens
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
