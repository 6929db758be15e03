-- ClickHouse variant of ../trace_steps.sql: per run and step of one trace. An llm span whose
-- parent is an llm span is part of that model call, not a call of its own.
SELECT run_id,
       step,
       min(Timestamp) AS started_at,
       (toUnixTimestamp64Micro(max(end_time)) - toUnixTimestamp64Micro(min(Timestamp))) / 1e3 AS duration_ms,
       countIf(span_type = 'llm' AND (TraceId, ParentSpanId) NOT IN (
           SELECT TraceId, SpanId FROM typed_spans WHERE TraceId = {trace_id:String} AND span_type = 'llm')) AS llm_calls,
       countIf(span_type = 'tool') AS tool_calls,
       countIf(span_type = 'tool' AND StatusCode = 'Error') AS tool_errors,
       sumIf(greatest(ifNull(attempts, 1) - 1, 0), span_type = 'tool') AS retries,
       sum(arrayCount(n -> n = 'retry', `Events.Name`)) AS retry_events,
       countIf(loop_kind IS NOT NULL OR has(`Events.Name`, 'loop_detected')) AS loop_hits,
       sumIf(ifNull(input_tokens, 0), span_type = 'llm') AS input_tokens,
       sumIf(ifNull(output_tokens, 0), span_type = 'llm') AS output_tokens
FROM typed_spans
WHERE TraceId = {trace_id:String} AND step IS NOT NULL AND span_type IN ('llm', 'tool')
GROUP BY run_id, step
ORDER BY min(Timestamp), step
