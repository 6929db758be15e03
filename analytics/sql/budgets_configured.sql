-- Per group (agent[, service]) the budgets its latest run was started with, where the producer
-- records them on the run span (loopsight.budget.*: the reference loop loopsight.react, and
-- @loopsight.agent(max_steps=...)); NULL where it recorded none.
WITH latest AS (
    SELECT agent, CASE WHEN $by_service::BOOLEAN THEN service END AS service,
           arg_max(trace_id, (started_at, run_id)) AS trace_id, arg_max(run_id, (started_at, run_id)) AS run_id
    FROM run_facts
    WHERE ($agent::VARCHAR IS NULL OR agent = $agent)
      AND ($service::VARCHAR IS NULL OR service = $service)
      AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
      AND ($until::TIMESTAMP IS NULL OR started_at < $until)
    GROUP BY agent, CASE WHEN $by_service::BOOLEAN THEN service END
)
SELECT l.agent, l.service,
       TRY_CAST(s."SpanAttributes"['loopsight.budget.max_steps'] AS BIGINT) AS max_steps,
       TRY_CAST(s."SpanAttributes"['loopsight.budget.max_tool_calls'] AS BIGINT) AS max_tool_calls,
       TRY_CAST(s."SpanAttributes"['loopsight.budget.max_seconds'] AS DOUBLE) AS max_seconds,
       TRY_CAST(s."SpanAttributes"['loopsight.budget.max_tokens'] AS BIGINT) AS max_tokens
FROM latest l
JOIN spans s ON s."TraceId" = l.trace_id AND s."SpanId" = l.run_id
WHERE s.span_type = 'agent'
  AND ($since::TIMESTAMP IS NULL OR s."Timestamp" >= $since)
  AND ($until::TIMESTAMP IS NULL OR s."Timestamp" < $until)
ORDER BY l.agent, l.service
