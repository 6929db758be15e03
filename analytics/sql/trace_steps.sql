-- Per run and step of one trace: model and tool calls, errors, retries, loop-guard hits, tokens.
-- An llm span whose parent is an llm span is part of that model call, not a call of its own; its
-- tokens count only when the parent reports none (loopsight.vocabulary.USAGE_COUNTED_ABOVE).
WITH nested AS (
    SELECT c."SpanId" AS span_id, {{usage_counted_above}} AS counted_above
    FROM spans c JOIN spans p ON p."TraceId" = c."TraceId" AND p."SpanId" = c."ParentSpanId"
    WHERE c."TraceId" = $trace_id AND p."TraceId" = $trace_id AND c.span_type = 'llm' AND p.span_type = 'llm'
)
SELECT run_id,
       step,
       min("Timestamp") AS started_at,
       date_diff('microsecond', min("Timestamp"), max(end_time)) / 1e3 AS duration_ms,
       count(*) FILTER (WHERE span_type = 'llm' AND n.span_id IS NULL) AS llm_calls,
       count(*) FILTER (WHERE span_type = 'tool') AS tool_calls,
       count(*) FILTER (WHERE span_type = 'tool' AND "StatusCode" = 'Error') AS tool_errors,
       coalesce(sum(greatest(coalesce(attempts, 1) - 1, 0)) FILTER (WHERE span_type = 'tool'), 0) AS retries,
       coalesce(sum(array_length(list_filter("Events", lambda e: e."Name" = 'retry'))), 0) AS retry_events,
       count(*) FILTER (WHERE loop_kind IS NOT NULL
                        OR array_length(list_filter("Events", lambda e: e."Name" = 'loop_detected')) > 0) AS loop_hits,
       coalesce(sum(input_tokens) FILTER (WHERE span_type = 'llm' AND NOT coalesce(n.counted_above, false)), 0) AS input_tokens,
       coalesce(sum(output_tokens) FILTER (WHERE span_type = 'llm' AND NOT coalesce(n.counted_above, false)), 0) AS output_tokens
FROM spans s
LEFT JOIN nested n ON n.span_id = s."SpanId"
WHERE "TraceId" = $trace_id AND step IS NOT NULL AND span_type IN ('llm', 'tool')
GROUP BY run_id, step
ORDER BY min("Timestamp"), step, run_id
