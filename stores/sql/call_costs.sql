-- ctes: calls=run_calls
-- Each model call of ``calls`` (a pass: run_calls.sql over its scope; new prices: the stored run_calls,
-- stored_calls.sql) with its price, as the table run_calls stores it: the price row of its provider
-- and model in effect when it started and for its input tier (the rule PRICE_OF_CALL of
-- loopsight.vocabulary), its cost (CALL_COST; NULL when unpriced, never 0) and what its prompt cache
-- saved (CACHE_SAVING). docs/cost.md.
SELECT c.*, p.input_mtok IS NOT NULL AS priced, {{call_cost}} AS cost_usd, {{cache_saving}} AS cache_saved_usd
FROM calls c
LEFT JOIN model_prices p ON p.provider = c.provider AND p.model = c.model AND {{price_of_call}}
