-- Every span of one trace in start order (an enclosing span before what starts with it),
-- in the API's Span shape plus its events.
SELECT "TraceId" AS trace_id,
       "SpanId" AS span_id,
       nullif("ParentSpanId", '') AS parent_span_id,
       "SpanName" AS name,
       span_type AS kind,
       "Timestamp" AS start,
       "Duration" / 1e6 AS duration_ms,
       lower("StatusCode") AS status,
       tool,
       args_hash,
       error_type,
       error_class,
       input_tokens,
       output_tokens,
       step,
       coalesce("SpanAttributes", MAP {}) AS attributes,
       coalesce(list_transform("Events", lambda e: {
           'time': e."Timestamp", 'name': e."Name", 'attributes': coalesce(e."Attributes", MAP {})
       }), []) AS events
FROM spans
WHERE "TraceId" = $trace_id
ORDER BY "Timestamp", end_time DESC, "SpanId"
