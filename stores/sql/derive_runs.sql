-- One row per run of the spans in scope (the table run_facts; analytics/derive.py runs it over
-- the traces a commit touched). Status rule as in runs.sql: ok when the run completed and its
-- span is not an error. An llm span whose parent is an llm span (another instrumentation's chat
-- span inside our model call) is part of that call, not a call of its own (its tokens are kept:
-- producers record them on one of the two).
WITH nested AS (
    SELECT c."TraceId" AS trace_id, c."SpanId" AS span_id
    FROM spans c JOIN spans p ON p."TraceId" = c."TraceId" AND p."SpanId" = c."ParentSpanId"
    WHERE c.span_type = 'llm' AND p.span_type = 'llm' AND c.run_id IS NOT NULL
),
calls AS (
    SELECT "TraceId" AS trace_id, run_id,
           -- distinct steps counted in the list: count(DISTINCT ...) adds a second aggregation pass
           list_unique(list(step) FILTER (WHERE span_type IN ('llm', 'tool')))::BIGINT AS steps,
           count(*) FILTER (WHERE span_type = 'llm' AND n.span_id IS NULL) AS llm_calls,
           count(*) FILTER (WHERE span_type = 'tool') AS tool_calls,
           count(*) FILTER (WHERE span_type = 'tool' AND "StatusCode" = 'Error') AS tool_errors,
           coalesce(sum(greatest(coalesce(attempts, 1) - 1, 0)) FILTER (WHERE span_type = 'tool'), 0) AS retries,
           coalesce(sum(input_tokens) FILTER (WHERE span_type = 'llm'), 0) AS input_tokens,
           coalesce(sum(output_tokens) FILTER (WHERE span_type = 'llm'), 0) AS output_tokens,
           count(*) FILTER (WHERE loop_kind IS NOT NULL) AS loop_marks,
           count(*) FILTER (WHERE loop_kind IS NOT NULL AND span_type IN ('llm', 'tool')) AS marked_calls,
           list_sort(list_distinct(list(tool) FILTER (WHERE span_type = 'tool' AND tool IS NOT NULL))) AS tools
    FROM spans s
    LEFT JOIN nested n ON n.trace_id = s."TraceId" AND n.span_id = s."SpanId"
    WHERE run_id IS NOT NULL
    GROUP BY "TraceId", run_id
)
SELECT r."TraceId" AS trace_id, r."SpanId" AS run_id, r.agent, r."ServiceName" AS service,
       r."Timestamp" AS started_at, r."Duration" AS duration, r."StatusCode" AS status_code,
       r.termination_reason,
       coalesce(r.termination_reason = 'completed' AND r."StatusCode" <> 'Error', false) AS ok,
       coalesce(c.steps, 0) AS steps, coalesce(c.llm_calls, 0) AS llm_calls,
       coalesce(c.tool_calls, 0) AS tool_calls, coalesce(c.tool_errors, 0) AS tool_errors,
       coalesce(c.retries, 0) AS retries, coalesce(c.input_tokens, 0) AS input_tokens,
       coalesce(c.output_tokens, 0) AS output_tokens, coalesce(c.loop_marks, 0) AS loop_marks,
       coalesce(c.marked_calls, 0) AS marked_calls, coalesce(c.tools, []) AS tools
FROM spans r
LEFT JOIN calls c ON c.trace_id = r."TraceId" AND c.run_id = r."SpanId"
WHERE r.span_type = 'agent' AND r."SpanId" = r.run_id
