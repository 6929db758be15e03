-- ClickHouse variant of ../top_runs.sql.
WITH runs AS (
    SELECT r.TraceId AS TraceId, r.SpanId AS SpanId
    FROM typed_spans r
    WHERE r.span_type = 'agent' AND r.SpanId = r.run_id
      AND ({agent:Nullable(String)} IS NULL OR r.agent = {agent:Nullable(String)})
      AND ({service:Nullable(String)} IS NULL OR r.ServiceName = {service:Nullable(String)})
      AND ({since:Nullable(DateTime64(6, 'UTC'))} IS NULL OR r.Timestamp >= {since:Nullable(DateTime64(6, 'UTC'))})
      AND ({until:Nullable(DateTime64(6, 'UTC'))} IS NULL OR r.Timestamp < {until:Nullable(DateTime64(6, 'UTC'))})
)
SELECT l.TraceId AS trace_id,
       l.run_id AS run_id,
       sum(ifNull(l.input_tokens, 0) + ifNull(l.output_tokens, 0)) AS tokens
FROM typed_spans l
WHERE l.span_type = 'llm' AND (l.TraceId, l.run_id) IN (SELECT TraceId, SpanId FROM runs)
GROUP BY l.TraceId, l.run_id
HAVING tokens > 0
ORDER BY tokens DESC, trace_id
LIMIT {limit:UInt64}
