-- ClickHouse variant of ../run_spans.sql: the run spans in scope, one row per run, started in
-- [{since}, {until}) (a NULL bound is open), of {agent} and {service} when given. Questions read it
-- as a CTE (first line `-- ctes: runs=run_spans`).
SELECT TraceId AS trace_id, assumeNotNull(run_id) AS run_id, agent, ServiceName AS service, Timestamp AS started_at,
       end_time, Duration AS duration, StatusCode AS status_code, termination_reason
FROM typed_spans t
WHERE t.span_type = 'agent' AND t.SpanId = t.run_id
  AND ({agent:Nullable(String)} IS NULL OR agent = {agent:Nullable(String)})
  AND ({service:Nullable(String)} IS NULL OR ServiceName = {service:Nullable(String)})
  AND ({since:Nullable(DateTime64(6, 'UTC'))} IS NULL OR Timestamp >= {since:Nullable(DateTime64(6, 'UTC'))})
  AND ({until:Nullable(DateTime64(6, 'UTC'))} IS NULL OR Timestamp < {until:Nullable(DateTime64(6, 'UTC'))})
