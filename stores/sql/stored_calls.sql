-- The stored model calls (run_calls) without their prices: what call_costs.sql prices again when the
-- writer's prices change.
SELECT * EXCLUDE (priced, cost_usd, cache_saved_usd) FROM run_calls
