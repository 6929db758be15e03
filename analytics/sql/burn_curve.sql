-- Input tokens per step per agent, the replayed-history curve (burn_steps = burn_steps_derived.sql).
SELECT agent, step, count(*) AS runs,
       round(avg(input_tokens), 1) AS avg_input_tokens,
       round(quantile_cont(input_tokens, 0.5), 3) AS p50_input_tokens,
       round(quantile_cont(input_tokens, 0.95), 3) AS p95_input_tokens
FROM burn_steps
WHERE step <= $max_step::BIGINT
GROUP BY agent, step
ORDER BY agent, step
