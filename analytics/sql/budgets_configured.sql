-- Per group (agent[, service]) the budgets its runs were started with, where the producer records
-- them on the run span (loopsight.budget.*: the reference loop loopsight.react and @loopsight.agent
-- with max_steps=...): the value of the latest run that recorded one, NULL where none did.
WITH scoped AS (
    SELECT f.agent, CASE WHEN $by_service::BOOLEAN THEN f.service END AS service, f.started_at,
           TRY_CAST(s."SpanAttributes"['loopsight.budget.max_steps'] AS BIGINT) AS max_steps,
           TRY_CAST(s."SpanAttributes"['loopsight.budget.max_tool_calls'] AS BIGINT) AS max_tool_calls,
           TRY_CAST(s."SpanAttributes"['loopsight.budget.max_seconds'] AS DOUBLE) AS max_seconds,
           TRY_CAST(s."SpanAttributes"['loopsight.budget.max_tokens'] AS BIGINT) AS max_tokens
    FROM run_facts f
    JOIN spans s ON s."TraceId" = f.trace_id AND s."SpanId" = f.run_id
    WHERE s.span_type = 'agent'
      AND ($since::TIMESTAMP IS NULL OR s."Timestamp" >= $since)
      AND ($until::TIMESTAMP IS NULL OR s."Timestamp" < $until)
      AND ($agent::VARCHAR IS NULL OR f.agent = $agent)
      AND ($service::VARCHAR IS NULL OR f.service = $service)
      AND ($since::TIMESTAMP IS NULL OR f.started_at >= $since)
      AND ($until::TIMESTAMP IS NULL OR f.started_at < $until)
)
SELECT agent, service,
       arg_max(max_steps, started_at) FILTER (WHERE max_steps IS NOT NULL) AS max_steps,
       arg_max(max_tool_calls, started_at) FILTER (WHERE max_tool_calls IS NOT NULL) AS max_tool_calls,
       arg_max(max_seconds, started_at) FILTER (WHERE max_seconds IS NOT NULL) AS max_seconds,
       arg_max(max_tokens, started_at) FILTER (WHERE max_tokens IS NOT NULL) AS max_tokens
FROM scoped
GROUP BY agent, service
ORDER BY agent, service
