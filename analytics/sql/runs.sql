-- Runs, newest first. A run is an invoke_agent span that is its own run (no agent ancestor).
-- A span starts after its run did (5 min of clock skew allowed), so child scans are bounded
-- by the window's start. Optional sub-query filters are uncorrelated (a correlated one costs
-- a join over every run even when off) and hold `$x IS NOT NULL`, which empties them when off.
-- Run status rule (the same in every question): 'ok' when the run completed and its span
-- is not an error, else 'error'.
WITH page AS (
    -- The page's runs, reading only the columns the order and the active filters need.
    SELECT r."TraceId", r."SpanId", r."Timestamp"
    FROM spans r
    WHERE r.span_type = 'agent' AND r."SpanId" = r.run_id
      AND ($trace_id::VARCHAR IS NULL OR r."TraceId" = $trace_id)
      AND ($run_ids::VARCHAR[] IS NULL OR list_contains($run_ids::VARCHAR[], r."SpanId"))
      AND ($agent::VARCHAR IS NULL OR r.agent = $agent)
      AND ($service::VARCHAR IS NULL OR r."ServiceName" = $service)
      AND ($termination_reason::VARCHAR IS NULL OR r.termination_reason = $termination_reason)
      AND ($status::VARCHAR IS NULL
           OR (CASE WHEN r.termination_reason = 'completed' AND r."StatusCode" <> 'Error' THEN 'ok' ELSE 'error' END) = $status)
      AND ($since::TIMESTAMP IS NULL OR r."Timestamp" >= $since)
      AND ($until::TIMESTAMP IS NULL OR r."Timestamp" < $until)
      AND ($tool::VARCHAR IS NULL OR r."TraceId" || r."SpanId" IN (
            SELECT t."TraceId" || t.run_id FROM spans t
            WHERE $tool::VARCHAR IS NOT NULL AND t.span_type = 'tool' AND t.tool = $tool
              AND ($since::TIMESTAMP IS NULL OR t."Timestamp" >= $since::TIMESTAMP - INTERVAL 5 MINUTE)))
      AND ($min_tokens::BIGINT IS NULL OR r."TraceId" || r."SpanId" IN (
            SELECT l."TraceId" || l.run_id FROM spans l
            WHERE $min_tokens::BIGINT IS NOT NULL AND l.span_type = 'llm'
              AND ($since::TIMESTAMP IS NULL OR l."Timestamp" >= $since::TIMESTAMP - INTERVAL 5 MINUTE)
            GROUP BY l."TraceId", l.run_id
            HAVING sum(coalesce(l.input_tokens, 0) + coalesce(l.output_tokens, 0)) >= $min_tokens))
    ORDER BY r."Timestamp" DESC, r."TraceId"
    LIMIT $limit OFFSET $offset
),
picked AS (
    SELECT r."TraceId", r."SpanId", r.run_id, r.agent, r."ServiceName", r."Timestamp", r."Duration",
           r."StatusCode", r.termination_reason
    FROM spans r
    SEMI JOIN page p ON r."TraceId" = p."TraceId" AND r."SpanId" = p."SpanId"
    WHERE r."Timestamp" >= (SELECT min("Timestamp") FROM page)
),
agg AS (
    SELECT s."TraceId", s.run_id,
           count(DISTINCT s.step) FILTER (WHERE s.span_type IN ('llm', 'tool')) AS steps,
           count(*) FILTER (WHERE s.span_type = 'llm') AS llm_calls,
           count(*) FILTER (WHERE s.span_type = 'tool') AS tool_calls,
           count(*) FILTER (WHERE s.span_type = 'tool' AND s."StatusCode" = 'Error') AS tool_errors,
           coalesce(sum(greatest(coalesce(s.attempts, 1) - 1, 0)) FILTER (WHERE s.span_type = 'tool'), 0) AS retries,
           coalesce(sum(s.input_tokens) FILTER (WHERE s.span_type = 'llm'), 0) AS input_tokens,
           coalesce(sum(s.output_tokens) FILTER (WHERE s.span_type = 'llm'), 0) AS output_tokens,
           count(*) FILTER (WHERE s.loop_kind IS NOT NULL) AS loops
    FROM spans s
    JOIN picked p ON s."TraceId" = p."TraceId" AND s.run_id = p.run_id
    -- A span starts after its run did (5 min of clock skew allowed): lets old row groups be skipped.
    WHERE s."Timestamp" >= (SELECT min("Timestamp") FROM picked) - INTERVAL 5 MINUTE
    GROUP BY s."TraceId", s.run_id
)
SELECT p."TraceId" AS trace_id,
       p.run_id,
       p.agent,
       p."ServiceName" AS service,
       p."Timestamp" AS started_at,
       p."Duration" / 1e6 AS duration_ms,
       CASE WHEN p.termination_reason = 'completed' AND p."StatusCode" <> 'Error' THEN 'ok' ELSE 'error' END AS status,
       p.termination_reason,
       coalesce(a.steps, 0) AS steps,
       coalesce(a.llm_calls, 0) AS llm_calls,
       coalesce(a.tool_calls, 0) AS tool_calls,
       coalesce(a.tool_errors, 0) AS tool_errors,
       coalesce(a.retries, 0) AS retries,
       coalesce(a.input_tokens, 0) AS input_tokens,
       coalesce(a.output_tokens, 0) AS output_tokens,
       coalesce(a.loops, 0) AS loops
FROM picked p
LEFT JOIN agg a ON a."TraceId" = p."TraceId" AND a.run_id = p.run_id
ORDER BY p."Timestamp" DESC, p."TraceId"
