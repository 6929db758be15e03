-- ctes: runs=run_spans
-- Input tokens per step of every run in scope (shared by the burn questions as the CTE burn_steps; the
-- rows of the table run_steps).
-- A step's input is the largest model input of that step; producers that give no step are numbered
-- by the start order of their model calls (only the runs with such calls are numbered).
WITH llm AS (
    SELECT s."TraceId" AS trace_id, s.run_id, r.agent, r.service, r.started_at, s."SpanId" AS span_id, s."Timestamp" AS ts, s.input_tokens, s.step
    FROM spans s
    JOIN runs r ON s."TraceId" = r.trace_id AND s.run_id = r.run_id
    WHERE s.span_type = 'llm'
),
numbered AS (
    SELECT trace_id, run_id, span_id, ts, row_number() OVER (PARTITION BY trace_id, run_id ORDER BY ts, span_id) - 1 AS n
    FROM llm
    WHERE (trace_id, run_id) IN (SELECT (trace_id, run_id) FROM llm WHERE step IS NULL)
)
SELECT l.trace_id, l.run_id, l.agent, l.service, l.started_at, coalesce(l.step, n.n) AS step, max(l.input_tokens) AS input_tokens
FROM llm l
LEFT JOIN numbered n ON l.step IS NULL AND n.trace_id = l.trace_id AND n.run_id = l.run_id AND n.span_id = l.span_id AND n.ts = l.ts
WHERE l.input_tokens IS NOT NULL
GROUP BY l.trace_id, l.run_id, l.agent, l.service, l.started_at, coalesce(l.step, n.n)
