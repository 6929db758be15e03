-- ctes: priced=priced_calls
-- Per (provider, model) pair of the runs in scope: calls, tokens and cost (priced_calls.sql), and
-- how it is priced (model_prices: the source and the name it was priced as). Most spent first.
SELECT c.provider, c.model,
       count(*) AS calls,
       count(*) FILTER (WHERE NOT c.priced) AS unpriced_calls,
       sum(c.input_tokens) AS input_tokens,
       sum(c.output_tokens) AS output_tokens,
       sum(c.cache_read_tokens) AS cache_read_input_tokens,
       sum(c.cache_write_tokens) AS cache_write_input_tokens,
       round(sum(c.cost_usd), 9) AS cost_usd
FROM priced c
GROUP BY c.provider, c.model
ORDER BY sum(c.cost_usd) DESC NULLS LAST, calls DESC, c.provider, c.model
