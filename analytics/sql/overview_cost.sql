-- The cost tiles for the current window [$since, $until) and the previous one [$previous_since, $since),
-- over the runs that started in each: every priced call of theirs (the rules PRICE_OF_CALL and
-- CALL_COST, as priced_calls.sql prices them) summed, and per successful run (the ok runs with a
-- priced call). NULL when no call is priced.
WITH run_costs AS (
    SELECT c.trace_id, c.run_id, c.started_at, sum({{call_cost}}) AS cost_usd
    FROM run_calls c
    LEFT JOIN model_prices p ON p.provider = c.provider AND p.model = c.model
    WHERE c.started_at >= $previous_since AND c.started_at < $until
      AND ($agent::VARCHAR IS NULL OR c.agent = $agent)
      AND ($service::VARCHAR IS NULL OR c.service = $service)
      AND {{price_of_call}}
    GROUP BY c.trace_id, c.run_id, c.started_at
)
SELECT k.started_at >= $since AS current,
       round(sum(k.cost_usd), 9) AS cost_usd,
       round(sum(k.cost_usd) FILTER (WHERE f.ok) / nullif(count(k.cost_usd) FILTER (WHERE f.ok), 0), 9)
           AS cost_per_success_usd
FROM run_costs k
JOIN run_facts f ON f.started_at = k.started_at AND f.trace_id = k.trace_id AND f.run_id = k.run_id
GROUP BY current
