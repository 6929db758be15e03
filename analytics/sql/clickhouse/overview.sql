-- ClickHouse variant of ../overview.sql.
WITH runs AS (
    SELECT r.TraceId AS TraceId, r.SpanId AS SpanId, r.Duration AS Duration,
           r.Timestamp >= {since:DateTime64(6, 'UTC')} AS current,
           r.termination_reason = 'completed' AND r.StatusCode != 'Error' AS ok
    FROM typed_spans r
    WHERE r.span_type = 'agent' AND r.SpanId = r.run_id
      AND r.Timestamp >= {previous_since:DateTime64(6, 'UTC')} AND r.Timestamp < {until:DateTime64(6, 'UTC')}
      AND ({agent:Nullable(String)} IS NULL OR r.agent = {agent:Nullable(String)})
      AND ({service:Nullable(String)} IS NULL OR r.ServiceName = {service:Nullable(String)})
),
children AS (
    SELECT s.TraceId AS TraceId, s.run_id AS run_id,
           sumIf(ifNull(s.input_tokens, 0) + ifNull(s.output_tokens, 0), s.span_type = 'llm') AS tokens,
           countIf(s.span_type = 'tool') AS tool_calls,
           countIf(s.span_type = 'tool' AND s.StatusCode = 'Error') AS tool_errors,
           max(s.loop_kind IS NOT NULL) AS looped
    FROM typed_spans s
    WHERE s.span_type IN ('llm', 'tool') AND (s.TraceId, s.run_id) IN (SELECT TraceId, SpanId FROM runs)
      -- A call starts after its run did (5 min of clock skew allowed), as on DuckDB.
      AND s.Timestamp >= {previous_since:DateTime64(6, 'UTC')} - INTERVAL 5 MINUTE
    GROUP BY s.TraceId, s.run_id
)
SELECT r.current AS current,
       count() AS runs,
       countIf(r.ok) AS ok_runs,
       sumIf(ifNull(c.tokens, 0), r.ok) AS ok_tokens,
       sum(ifNull(c.tool_calls, 0)) AS tool_calls,
       sum(ifNull(c.tool_errors, 0)) AS tool_errors,
       countIf(ifNull(c.looped, 0) = 1) AS looped_runs,
       quantileExactInclusive(0.95)(toFloat64(r.Duration)) / 1e6 AS p95_duration_ms
FROM runs r
LEFT JOIN children c ON c.TraceId = r.TraceId AND c.run_id = r.SpanId
GROUP BY r.current
SETTINGS join_use_nulls = 1
