-- The runs that spent the most tokens (input + output over their llm spans), biggest first.
WITH runs AS (
    SELECT r."TraceId", r."SpanId"
    FROM spans r
    WHERE r.span_type = 'agent' AND r."SpanId" = r.run_id
      AND ($agent::VARCHAR IS NULL OR r.agent = $agent)
      AND ($service::VARCHAR IS NULL OR r."ServiceName" = $service)
      AND ($since::TIMESTAMP IS NULL OR r."Timestamp" >= $since)
      AND ($until::TIMESTAMP IS NULL OR r."Timestamp" < $until)
),
tokens AS (
    -- Sum per run first, then keep the runs in scope: the join then probes runs, not calls.
    SELECT l."TraceId", l.run_id, sum(coalesce(l.input_tokens, 0) + coalesce(l.output_tokens, 0)) AS tokens
    FROM spans l
    WHERE l.span_type = 'llm'
      -- A call starts after its run did (5 min of clock skew allowed): lets old row groups be skipped.
      AND ($since::TIMESTAMP IS NULL OR l."Timestamp" >= $since::TIMESTAMP - INTERVAL 5 MINUTE)
    GROUP BY l."TraceId", l.run_id
    HAVING sum(coalesce(l.input_tokens, 0) + coalesce(l.output_tokens, 0)) > 0
)
SELECT t."TraceId" AS trace_id, t.run_id, t.tokens
FROM tokens t
SEMI JOIN runs r ON t."TraceId" = r."TraceId" AND t.run_id = r."SpanId"
ORDER BY t.tokens DESC, trace_id
LIMIT $limit
