-- ctes: loop_rows=loops_derived
-- ClickHouse variant of ../loops_rate.sql.
SELECT (SELECT count()
        FROM typed_spans
        WHERE span_type = 'agent' AND SpanId = run_id
          AND ({agent:Nullable(String)} IS NULL OR agent = {agent:Nullable(String)})
          AND ({service:Nullable(String)} IS NULL OR ServiceName = {service:Nullable(String)})
          AND ({since:Nullable(DateTime64(6, 'UTC'))} IS NULL OR Timestamp >= {since:Nullable(DateTime64(6, 'UTC'))})
          AND ({until:Nullable(DateTime64(6, 'UTC'))} IS NULL OR Timestamp < {until:Nullable(DateTime64(6, 'UTC'))})) AS runs,
       (SELECT uniqExact(trace_id, run_id) FROM loop_rows) AS looping_runs
