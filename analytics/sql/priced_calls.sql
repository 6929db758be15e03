-- Every model call of the runs in scope (started in [$since, $until), of $agent and $service when
-- given) with its cost in USD, as stored when it was derived (run_calls, priced by the rules
-- PRICE_OF_CALL and CALL_COST of loopsight.vocabulary against model_prices, and again whenever the
-- writer's prices change; docs/cost.md). ``cost_usd`` is NULL for an unpriced call, never 0;
-- ``cache_saved_usd`` what its prompt cache saved (CACHE_SAVING). Read by the cost questions as the CTE ``priced``.
SELECT c.trace_id, c.run_id, c.agent, c.service, c.started_at, c.span_id, c.ts, c.step, c.provider, c.model,
       c.input_tokens, c.output_tokens, c.cache_read_tokens, c.cache_write_tokens, c.ingested_at,
       c.priced, c.cost_usd, c.cache_saved_usd
FROM run_calls c
WHERE ($agent::VARCHAR IS NULL OR c.agent = $agent)
  AND ($service::VARCHAR IS NULL OR c.service = $service)
  AND ($since::TIMESTAMP IS NULL OR c.started_at >= $since)
  AND ($until::TIMESTAMP IS NULL OR c.started_at < $until)
