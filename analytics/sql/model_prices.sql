-- The price rows the store holds (model_prices: written by its writer from genai-prices and the
-- price file when it opened, and for each new model since), USD per million tokens.
SELECT provider, model, valid_from, valid_until, input_from, input_to,
       input_mtok, cache_read_mtok, cache_write_mtok, output_mtok, priced_as, source
FROM model_prices
ORDER BY provider, model, valid_from, input_from
