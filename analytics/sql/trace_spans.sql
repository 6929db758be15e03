-- Every span of one trace, in start order.
SELECT "TraceId" AS trace_id,
       "SpanId" AS span_id,
       "ParentSpanId" AS parent_span_id,
       "SpanName" AS name,
       span_type AS kind,
       "Timestamp" AS start,
       "Duration" / 1e6 AS duration_ms,
       "StatusCode" AS status,
       tool,
       args_hash,
       error_type,
       error_class,
       input_tokens,
       output_tokens,
       step,
       run_id,
       loop_kind,
       "SpanAttributes" AS attributes,
       "Events" AS events
FROM spans
WHERE "TraceId" = $trace_id
ORDER BY "Timestamp", "SpanId"
