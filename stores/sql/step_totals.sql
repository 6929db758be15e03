-- ctes: runs=run_spans
-- Per run and step, what the step spent and what the run had spent by its end (the table
-- run_step_totals, read by the budget advisor's replay: analytics/sql/budgets*.sql, docs/budgets.md).
-- A step is a model turn: the llm and tool spans of the run with that step number (derived for
-- producers that give none, loopsight.vocabulary.STEP). Steps are taken in step-number order:
-- ordinal 1 is the first. tool_calls / tokens are the step's own (tool spans; input + output
-- tokens of its llm spans, as run_facts counts them: USAGE_COUNTED_ABOVE); cum_* add every earlier step. start_ms is
-- when the step began (its first span) and end_ms when it had ended (its last span), in ms since
-- the run began, each the largest so far so neither goes back in time along the steps.
WITH calls AS (
    SELECT s."TraceId" AS trace_id, s.run_id, s.step,
           count(*) FILTER (WHERE s.span_type = 'tool') AS tool_calls,
           coalesce(sum(s.input_tokens) FILTER (WHERE s.span_type = 'llm' AND NOT coalesce({{usage_counted_above}}, false)), 0)
               + coalesce(sum(s.output_tokens) FILTER (WHERE s.span_type = 'llm' AND NOT coalesce({{usage_counted_above}}, false)), 0)
               AS tokens,
           min(s."Timestamp") AS first_at, max(s.end_time) AS last_at
    FROM spans s
    LEFT JOIN spans p ON p."TraceId" = s."TraceId" AND p."SpanId" = s."ParentSpanId"
    WHERE s.span_type IN ('llm', 'tool') AND s.run_id IS NOT NULL AND s.step IS NOT NULL
    GROUP BY s."TraceId", s.run_id, s.step
)
SELECT c.trace_id, c.run_id, r.agent, r.service, r.started_at, c.step::BIGINT AS step,
       row_number() OVER w AS ordinal,
       c.tool_calls, c.tokens::BIGINT AS tokens,
       (sum(c.tool_calls) OVER w)::BIGINT AS cum_tool_calls,
       (sum(c.tokens) OVER w)::BIGINT AS cum_tokens,
       greatest(epoch_us(max(c.first_at) OVER w) - epoch_us(r.started_at), 0) / 1000.0 AS start_ms,
       greatest(epoch_us(max(c.last_at) OVER w) - epoch_us(r.started_at), 0) / 1000.0 AS end_ms
FROM calls c
JOIN runs r ON r.trace_id = c.trace_id AND r.run_id = c.run_id
WINDOW w AS (PARTITION BY c.trace_id, c.run_id ORDER BY c.step ROWS UNBOUNDED PRECEDING)
