-- The traces whose runs match a free-text search: a trace id (or its start), an agent or service,
-- a tool, an error type or message, a span name or attribute value (case-insensitive), in the
-- window; the newest first, at most $limit.
SELECT "TraceId" AS trace_id, max("Timestamp") AS latest
FROM spans
WHERE run_id IS NOT NULL
  AND ($since::TIMESTAMP IS NULL OR "Timestamp" >= $since)
  AND ($until::TIMESTAMP IS NULL OR "Timestamp" < $until)
  AND (starts_with("TraceId", lower($q))
       OR contains(lower(coalesce(agent, '')), lower($q))
       OR contains(lower("ServiceName"), lower($q))
       OR contains(lower(coalesce(tool, '')), lower($q))
       OR contains(lower(coalesce(error_type, '')), lower($q))
       OR contains(lower("StatusMessage"), lower($q))
       OR contains(lower("SpanName"), lower($q))
       OR contains(lower(array_to_string(map_values("SpanAttributes"), ' ')), lower($q)))
GROUP BY "TraceId"
ORDER BY latest DESC, trace_id
LIMIT $limit
