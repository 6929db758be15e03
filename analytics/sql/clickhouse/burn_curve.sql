-- ctes: burn_steps=burn_steps_derived
-- ClickHouse variant of ../burn_curve.sql.
SELECT agent, step, count() AS runs,
       round(avg(input_tokens), 1) AS avg_input_tokens,
       quantileExactInclusive(0.5)(toFloat64(input_tokens)) AS p50_input_tokens,
       quantileExactInclusive(0.95)(toFloat64(input_tokens)) AS p95_input_tokens
FROM burn_steps
WHERE step <= {max_step:Int64}
GROUP BY agent, step
ORDER BY agent, step
