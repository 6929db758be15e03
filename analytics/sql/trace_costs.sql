-- The model calls of one trace with their cost (NULL: unpriced), as stored (run_calls; priced_calls.sql).
SELECT c.run_id, c.span_id, c.step, c.provider, c.model, c.cache_read_tokens, c.cache_write_tokens,
       c.priced, c.cost_usd
FROM run_calls c
WHERE c.trace_id = $trace_id
