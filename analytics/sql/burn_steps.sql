-- ctes: runs=run_spans
-- Input tokens per step of every run in scope (shared by the burn questions as the CTE burn_steps).
-- A step's input is the largest model input of that step; producers that give no step are numbered
-- by the start order of their model calls.
WITH llm AS (
    SELECT s."TraceId" AS trace_id, s.run_id, r.agent, s.input_tokens,
           coalesce(s.step, row_number() OVER (PARTITION BY s."TraceId", s.run_id ORDER BY s."Timestamp", s."SpanId") - 1) AS step
    FROM spans s
    JOIN runs r ON s."TraceId" = r.trace_id AND s.run_id = r.run_id
    WHERE s.span_type = 'llm'
)
SELECT trace_id, run_id, agent, step, max(input_tokens) AS input_tokens
FROM llm
WHERE input_tokens IS NOT NULL
GROUP BY trace_id, run_id, agent, step
