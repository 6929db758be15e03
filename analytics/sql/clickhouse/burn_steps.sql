-- ClickHouse variant of ../burn_steps.sql: input tokens per step of every run in scope (the CTE burn_steps).
WITH runs AS (
    SELECT TraceId AS trace_id, assumeNotNull(run_id) AS run_id, agent
    FROM typed_spans
    WHERE span_type = 'agent' AND SpanId = run_id
      AND ({agent:Nullable(String)} IS NULL OR agent = {agent:Nullable(String)})
      AND ({service:Nullable(String)} IS NULL OR ServiceName = {service:Nullable(String)})
      AND ({since:Nullable(DateTime64(6, 'UTC'))} IS NULL OR Timestamp >= {since:Nullable(DateTime64(6, 'UTC'))})
      AND ({until:Nullable(DateTime64(6, 'UTC'))} IS NULL OR Timestamp < {until:Nullable(DateTime64(6, 'UTC'))})
),
llm AS (
    SELECT s.TraceId AS trace_id, r.run_id AS run_id, r.agent AS agent, s.input_tokens AS input_tokens,
           coalesce(s.step, toInt64(row_number() OVER (PARTITION BY s.TraceId, s.run_id ORDER BY s.Timestamp, s.SpanId)) - 1) AS step
    FROM typed_spans s
    JOIN runs r ON s.TraceId = r.trace_id AND s.run_id = r.run_id
    WHERE s.span_type = 'llm'
)
SELECT trace_id, run_id, agent, step, max(l.input_tokens) AS input_tokens
FROM llm l
WHERE l.input_tokens IS NOT NULL
GROUP BY trace_id, run_id, agent, step
