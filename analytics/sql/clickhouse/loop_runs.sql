-- ClickHouse variant of ../loop_runs.sql.
SELECT count() AS runs
FROM typed_spans r
WHERE r.span_type = 'agent' AND r.SpanId = r.run_id
  AND r.Timestamp >= {since:DateTime64(6, 'UTC')} AND r.Timestamp < {until:DateTime64(6, 'UTC')}
  AND ({agent:Nullable(String)} IS NULL OR r.agent = {agent:Nullable(String)})
  AND ({service:Nullable(String)} IS NULL OR r.ServiceName = {service:Nullable(String)})
  AND (r.TraceId, r.SpanId) IN (SELECT s.TraceId, s.run_id FROM typed_spans s WHERE s.loop_kind IS NOT NULL AND s.run_id IS NOT NULL)
