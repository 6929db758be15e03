-- Per agent: the growth exponent k of input tokens per step and the token totals by outcome.
-- k is fitted by least squares on log(input(s) - input(first step)) = c_run + k * log(s - first step)
-- with one intercept per run (the within-run estimator), so a constant prompt does not bend a
-- linear history replay below 1. growth_rows = each run's centred sums (burn_growth.sql, or the
-- table run_growth through burn_growth_derived.sql); run totals and their stored cost from run_facts
-- (the sums of their priced calls): per successful run over the priced ones, on failures summed, and the
-- share of input tokens served from the provider's prompt cache and what that cache saved (CACHE_SAVING).
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
    SELECT f.agent, f.ok, f.input_tokens + f.output_tokens AS tokens, f.input_tokens,
           coalesce(f.cache_read_tokens, 0) AS cache_read_tokens, f.cost_usd, f.cache_saved_usd,
           coalesce(f.unpriced_calls, 0) AS unpriced_calls
    FROM run_facts f
    WHERE ($agent::VARCHAR IS NULL OR f.agent = $agent)
      AND ($service::VARCHAR IS NULL OR f.service = $service)
      AND ($since::TIMESTAMP IS NULL OR f.started_at >= $since)
      AND ($until::TIMESTAMP IS NULL OR f.started_at < $until)
),
totals AS (
    SELECT agent, count(*) AS runs,
           sum(tokens) FILTER (WHERE ok) / nullif(count(*) FILTER (WHERE ok), 0) AS tokens_per_success,
           coalesce(sum(tokens) FILTER (WHERE NOT ok), 0) AS tokens_on_failures,
           sum(cost_usd) AS cost_usd,
           sum(cost_usd) FILTER (WHERE ok) / nullif(count(cost_usd) FILTER (WHERE ok), 0) AS cost_per_success_usd,
           CASE WHEN count(*) FILTER (WHERE NOT ok) = 0 THEN 0 ELSE sum(cost_usd) FILTER (WHERE NOT ok) END
               AS cost_on_failures_usd,
           sum(unpriced_calls) AS unpriced_calls,
           sum(cache_read_tokens) / nullif(sum(input_tokens), 0) AS cache_hit_ratio,
           sum(cache_saved_usd) AS cache_saved_usd
    FROM tokens
    GROUP BY agent
)
SELECT t.agent, t.runs,
       round(f.k, 4) AS growth_exponent,
       -- a condition cast: ClickHouse would answer it as 0 / 1
       CAST(coalesce(f.k >= $superlinear_k::DOUBLE AND f.k - 2 * f.se > 1 AND f.fit_runs >= $min_runs::BIGINT
                     AND f.n >= $min_points::BIGINT, false) AS BOOLEAN) AS superlinear,
       round(t.tokens_per_success, 1) AS tokens_per_success,
       t.tokens_on_failures,
       round(f.se, 4) AS growth_exponent_se,
       coalesce(f.n, 0) AS fit_points,
       round(t.cost_usd, 9) AS cost_usd,
       round(t.cost_per_success_usd, 9) AS cost_per_success_usd,
       round(t.cost_on_failures_usd, 9) AS cost_on_failures_usd,
       t.unpriced_calls,
       round(t.cache_hit_ratio, 4) AS cache_hit_ratio,
       round(t.cache_saved_usd, 9) AS cache_saved_usd
FROM totals t
LEFT JOIN fit_se f ON f.agent = t.agent
ORDER BY t.agent
