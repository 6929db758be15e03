-- The cost tiles for the current window [$current_since, $until) and the previous one
-- [$since, $current_since), over the runs that started in each: their stored cost (run_facts: the
-- sum of their priced calls, as priced_calls.sql holds them) summed, and per successful run (the ok
-- runs with a priced call). NULL when no call is priced; a window without a run with a model call
-- has no row.
SELECT started_at >= $current_since::TIMESTAMP AS current,
       round(sum(cost_usd), 9) AS cost_usd,
       round(sum(cost_usd) FILTER (WHERE ok) / nullif(count(cost_usd) FILTER (WHERE ok), 0), 9)
           AS cost_per_success_usd
FROM run_facts
WHERE (cost_usd IS NOT NULL OR unpriced_calls > 0)
  AND ($agent::VARCHAR IS NULL OR agent = $agent)
  AND ($service::VARCHAR IS NULL OR service = $service)
  AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
  AND ($until::TIMESTAMP IS NULL OR started_at < $until)
GROUP BY current
