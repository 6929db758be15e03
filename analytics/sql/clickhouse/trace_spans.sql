-- ClickHouse variant of ../trace_spans.sql: every span of one trace, in start order.
SELECT TraceId AS trace_id,
       SpanId AS span_id,
       nullIf(ParentSpanId, '') AS parent_span_id,
       SpanName AS name,
       span_type AS kind,
       Timestamp AS start,
       Duration / 1e6 AS duration_ms,
       lower(StatusCode) AS status,
       tool,
       args_hash,
       error_type,
       error_class,
       input_tokens,
       output_tokens,
       step,
       SpanAttributes AS attributes,
       arrayMap((t, n, a) -> CAST((t, n, a), 'Tuple(time DateTime64(6, \'UTC\'), name String, attributes Map(String, String))'),
                `Events.Timestamp`, `Events.Name`, `Events.Attributes`) AS events
FROM spans
WHERE TraceId = {trace_id:String}
ORDER BY Timestamp, SpanId
