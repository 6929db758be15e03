-- ctes: priced=priced_calls
-- The cost tiles for the current window [$current_since, $until) and the previous one
-- [$since, $current_since), over the runs that started in each: every priced call of theirs
-- (priced_calls.sql, read over both windows) summed, and per successful run (the ok runs with a
-- priced call). NULL when no call is priced.
WITH run_costs AS (
    SELECT trace_id, run_id, started_at, sum(cost_usd) AS cost_usd
    FROM priced
    GROUP BY trace_id, run_id, started_at
)
SELECT k.started_at >= $current_since AS current,
       round(sum(k.cost_usd), 9) AS cost_usd,
       round(sum(k.cost_usd) FILTER (WHERE f.ok) / nullif(count(k.cost_usd) FILTER (WHERE f.ok), 0), 9)
           AS cost_per_success_usd
FROM run_costs k
JOIN run_facts f ON f.started_at = k.started_at AND f.trace_id = k.trace_id AND f.run_id = k.run_id
GROUP BY current
