-- The runs that spent the most tokens (input + output over their llm spans), biggest first.
WITH runs AS (
    SELECT r."TraceId", r."SpanId"
    FROM spans r
    WHERE r.span_type = 'agent' AND r."SpanId" = r.run_id
      AND ($agent::VARCHAR IS NULL OR r.agent = $agent)
      AND ($service::VARCHAR IS NULL OR r."ServiceName" = $service)
      AND ($since::TIMESTAMP IS NULL OR r."Timestamp" >= $since)
      AND ($until::TIMESTAMP IS NULL OR r."Timestamp" < $until)
)
SELECT l."TraceId" AS trace_id,
       l.run_id,
       sum(coalesce(l.input_tokens, 0) + coalesce(l.output_tokens, 0)) AS tokens
FROM spans l
SEMI JOIN runs r ON l."TraceId" = r."TraceId" AND l.run_id = r."SpanId"
WHERE l.span_type = 'llm'
  -- A call starts after its run did (5 min of clock skew allowed): lets old row groups be skipped.
  AND ($since::TIMESTAMP IS NULL OR l."Timestamp" >= $since::TIMESTAMP - INTERVAL 5 MINUTE)
GROUP BY l."TraceId", l.run_id
HAVING sum(coalesce(l.input_tokens, 0) + coalesce(l.output_tokens, 0)) > 0
ORDER BY tokens DESC, trace_id
LIMIT $limit
