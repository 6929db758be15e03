-- One row per run of the spans in scope (the table run_facts; stores/derive.py runs it over the
-- traces a pass covers). The run rules of loopsight.vocabulary, over every agent span of the run:
-- - its agent is the first named agent span (by start: the top-most comes first), so a root that
--   names no agent ("Agent workflow") gives way to the agent span inside it; a run without any
--   (a framework root, RUN's fallback) takes its span's name;
-- - that named span is the run's principal: the run is an error when its span or the principal is;
-- - its end: the run span's reason (ours, or a framework signal on it), else the principal's, else
--   any agent span's signal, else a step budget exceeded, else from the status (RUN_OK). A budget is
--   an agent span's own (smolagents.max_steps, CrewAI's max_iter): it is exceeded by the steps of
--   the calls that agent made itself, not those of an agent inside it (a managed agent, a delegate).
-- An llm span whose parent is an llm span (another instrumentation's chat span inside our model
-- call) is part of that call, not a call of its own; its tokens count only when the parent reports
-- none (USAGE_COUNTED_ABOVE: our decorators leave them to the child, other pairs report them twice).
WITH RECURSIVE nested AS (
    SELECT c."TraceId" AS trace_id, c."SpanId" AS span_id, {{usage_counted_above}} AS counted_above
    FROM spans c JOIN spans p ON p."TraceId" = c."TraceId" AND p."SpanId" = c."ParentSpanId"
    WHERE c.span_type = 'llm' AND p.span_type = 'llm' AND c.run_id IS NOT NULL
),
calls AS (
    SELECT "TraceId" AS trace_id, run_id,
           -- distinct steps counted in the list: count(DISTINCT ...) adds a second aggregation pass
           list_unique(list(step) FILTER (WHERE span_type IN ('llm', 'tool')))::BIGINT AS steps,
           count(*) FILTER (WHERE span_type = 'llm' AND n.span_id IS NULL) AS llm_calls,
           count(*) FILTER (WHERE span_type = 'tool') AS tool_calls,
           count(*) FILTER (WHERE span_type = 'tool' AND args_hash IS NOT NULL) AS argued_calls,
           count(*) FILTER (WHERE span_type = 'tool' AND "StatusCode" = 'Error') AS tool_errors,
           coalesce(sum(greatest(coalesce(attempts, 1) - 1, 0)) FILTER (WHERE span_type = 'tool'), 0) AS retries,
           coalesce(sum(input_tokens) FILTER (WHERE span_type = 'llm' AND NOT coalesce(n.counted_above, false)), 0) AS input_tokens,
           coalesce(sum(output_tokens) FILTER (WHERE span_type = 'llm' AND NOT coalesce(n.counted_above, false)), 0) AS output_tokens,
           coalesce(sum(cache_read_tokens) FILTER (WHERE span_type = 'llm' AND NOT coalesce(n.counted_above, false)), 0) AS cache_read_tokens,
           coalesce(sum(cache_write_tokens) FILTER (WHERE span_type = 'llm' AND NOT coalesce(n.counted_above, false)), 0) AS cache_write_tokens,
           count(*) FILTER (WHERE loop_kind IS NOT NULL) AS loop_marks,
           count(*) FILTER (WHERE loop_kind IS NOT NULL AND span_type IN ('llm', 'tool')) AS marked_calls,
           list_sort(list_distinct(list(tool) FILTER (WHERE span_type = 'tool' AND tool IS NOT NULL))) AS tools,
           arg_min(session_id, "Timestamp") FILTER (WHERE session_id IS NOT NULL) AS session_id
    FROM spans s
    LEFT JOIN nested n ON n.trace_id = s."TraceId" AND n.span_id = s."SpanId"
    WHERE run_id IS NOT NULL
    GROUP BY "TraceId", run_id
),
named_spans AS (  -- a framework that names its agent on another span (LlamaIndex's steps)
    SELECT "TraceId" AS trace_id, run_id, arg_min(agent, ("Timestamp", "SpanId")) AS named_elsewhere
    FROM spans WHERE span_type <> 'agent' AND agent IS NOT NULL AND run_id IS NOT NULL
    GROUP BY "TraceId", run_id
),
agents AS (
    SELECT "TraceId" AS trace_id, run_id,
           arg_min(agent, ("Timestamp", "SpanId")) FILTER (WHERE agent IS NOT NULL) AS named,
           arg_min("StatusCode" = 'Error', ("Timestamp", "SpanId")) FILTER (WHERE agent IS NOT NULL) AS named_failed,
           arg_min(termination_reason, ("Timestamp", "SpanId")) FILTER (WHERE agent IS NOT NULL) AS named_reason,
           arg_min(termination_reason, ("Timestamp", "SpanId")) FILTER (WHERE termination_reason IS NOT NULL) AS signal
    FROM spans
    WHERE span_type = 'agent' AND run_id IS NOT NULL
    GROUP BY "TraceId", run_id
),
budgets AS (  -- agent spans with a step budget
    SELECT "TraceId" AS trace_id, "SpanId" AS span_id, run_id,
           TRY_CAST("SpanAttributes"['loopsight.budget.max_steps'] AS BIGINT) AS max_steps
    FROM spans
    WHERE span_type = 'agent' AND run_id IS NOT NULL
      AND TRY_CAST("SpanAttributes"['loopsight.budget.max_steps'] AS BIGINT) IS NOT NULL
),
owner(trace_id, span_id, step, cur, depth) AS (  -- each model call of those traces, up to its nearest agent span
    SELECT "TraceId", "SpanId", step, "ParentSpanId", 0 FROM spans
    WHERE span_type = 'llm' AND run_id IS NOT NULL AND "TraceId" IN (SELECT trace_id FROM budgets)
    UNION ALL
    SELECT o.trace_id, o.span_id, o.step, p."ParentSpanId", o.depth + 1
    FROM owner o JOIN spans p ON p."TraceId" = o.trace_id AND p."SpanId" = o.cur
    WHERE p.span_type <> 'agent' AND o.depth < 64
),
over_budget AS (
    SELECT b.trace_id, b.run_id, bool_or(list_unique(o.steps) > b.max_steps) AS exceeded
    FROM budgets b
    JOIN (SELECT trace_id, cur, list(step) AS steps FROM owner GROUP BY trace_id, cur) o
      ON o.trace_id = b.trace_id AND o.cur = b.span_id
    GROUP BY b.trace_id, b.run_id
),
runs AS (
    SELECT r."TraceId" AS trace_id, r."SpanId" AS run_id,
           coalesce(a.named, e.named_elsewhere, r."SpanName") AS agent, r."ServiceName" AS service,
           r."Timestamp" AS started_at, r."Duration" AS duration,
           CASE WHEN r."StatusCode" = 'Error' OR coalesce(a.named_failed, false) THEN 'Error' ELSE r."StatusCode" END
               AS "StatusCode",
           r.termination_reason AS own_reason, a.named_reason, a.signal, b.exceeded AS over_budget
    FROM spans r
    LEFT JOIN agents a ON a.trace_id = r."TraceId" AND a.run_id = r."SpanId"
    LEFT JOIN over_budget b ON b.trace_id = r."TraceId" AND b.run_id = r."SpanId"
    LEFT JOIN named_spans e ON e.trace_id = r."TraceId" AND e.run_id = r."SpanId"
    WHERE r."SpanId" = r.run_id
),
decided AS (
    SELECT u.*, c.* EXCLUDE (trace_id, run_id),
           coalesce(own_reason, named_reason, signal,
                    CASE WHEN over_budget THEN 'max_steps' END,
                    CASE WHEN u."StatusCode" = 'Error' THEN 'error' ELSE 'completed' END) AS termination_reason
    FROM runs u
    LEFT JOIN calls c ON c.trace_id = u.trace_id AND c.run_id = u.run_id
)
SELECT trace_id, run_id, agent, service, started_at, duration, "StatusCode" AS status_code, termination_reason,
       coalesce({{run_ok}}, false) AS ok,
       coalesce(steps, 0) AS steps, coalesce(llm_calls, 0) AS llm_calls,
       coalesce(tool_calls, 0) AS tool_calls, coalesce(tool_errors, 0) AS tool_errors,
       coalesce(retries, 0) AS retries, coalesce(input_tokens, 0) AS input_tokens,
       coalesce(output_tokens, 0) AS output_tokens, coalesce(loop_marks, 0) AS loop_marks,
       coalesce(marked_calls, 0) AS marked_calls, coalesce(tools, []) AS tools, session_id,
       coalesce(tool_calls, 0) = 0 OR argued_calls > 0 AS arguments_captured,
       coalesce(cache_read_tokens, 0) AS cache_read_tokens, coalesce(cache_write_tokens, 0) AS cache_write_tokens
FROM decided
