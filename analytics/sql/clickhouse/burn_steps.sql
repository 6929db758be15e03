-- ctes: run_spans=run_spans
-- ClickHouse variant of ../burn_steps.sql: input tokens per step of the runs of the traces {traces}
-- (kept per trace in loopsight_run_steps by steps_derive.sql; questions read burn_steps_derived.sql).
WITH runs AS (
    SELECT * FROM run_spans WHERE trace_id IN {traces:Array(String)}
),
llm AS (
    SELECT s.TraceId AS trace_id, r.run_id AS run_id, r.agent AS agent, r.service AS service, r.started_at AS started_at,
           s.input_tokens AS input_tokens,
           coalesce(s.step, toInt64(row_number() OVER (PARTITION BY s.TraceId, s.run_id ORDER BY s.Timestamp, s.SpanId)) - 1) AS step
    FROM typed_spans s
    JOIN runs r ON s.TraceId = r.trace_id AND s.run_id = r.run_id
    WHERE s.span_type = 'llm' AND s.TraceId IN {traces:Array(String)}
)
SELECT trace_id, run_id, agent, service, started_at, step, max(l.input_tokens) AS input_tokens
FROM llm l
WHERE l.input_tokens IS NOT NULL
GROUP BY trace_id, run_id, agent, service, started_at, step
