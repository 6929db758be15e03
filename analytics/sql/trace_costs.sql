-- The model calls of one trace with their cost (NULL: unpriced), as priced_calls.sql prices them.
SELECT c.run_id, c.span_id, c.step, c.provider, c.model, c.cache_read_tokens, c.cache_write_tokens,
       p.input_mtok IS NOT NULL AS priced, {{call_cost}} AS cost_usd
FROM run_calls c
LEFT JOIN model_prices p ON p.provider = c.provider AND p.model = c.model
WHERE c.trace_id = $trace_id AND {{price_of_call}}
