-- ctes: runs=run_spans
-- One row per model call of every run in scope that reports tokens (the table run_calls): what the
-- derivation prices against model_prices (call_costs.sql). Provider and model as
-- the span names them ('' when it does not); input tokens include the cached and cache-write ones
-- (loopsight.vocabulary.CACHE_CONVENTION). An instrumentation's chat span inside another's is a row
-- of its own only when the outer one reports no tokens (USAGE_COUNTED_ABOVE), as run_facts counts them.
SELECT s."TraceId" AS trace_id, s.run_id, r.agent, r.service, r.started_at, s."SpanId" AS span_id, s."Timestamp" AS ts,
       s.step, coalesce(s.provider, '') AS provider, coalesce(s.model, '') AS model,
       coalesce(s.input_tokens, 0) AS input_tokens, coalesce(s.output_tokens, 0) AS output_tokens,
       coalesce(s.cache_read_tokens, 0) AS cache_read_tokens, coalesce(s.cache_write_tokens, 0) AS cache_write_tokens,
       s.ingested_at
FROM spans s
JOIN runs r ON s."TraceId" = r.trace_id AND s.run_id = r.run_id
LEFT JOIN spans p ON p."TraceId" = s."TraceId" AND p."SpanId" = s."ParentSpanId"
WHERE s.span_type = 'llm' AND (s.input_tokens IS NOT NULL OR s.output_tokens IS NOT NULL)
  AND NOT coalesce({{usage_counted_above}}, false)
