-- Runs per time bucket and termination reason, with each reason's share of the bucket.
-- Buckets are aligned to the Unix epoch; a run falls in the bucket of its start.
WITH runs AS (
    SELECT time_bucket(to_seconds($bucket_seconds::BIGINT), r."Timestamp", TIMESTAMP '1970-01-01') AS bucket,
           coalesce(r.termination_reason, 'unknown') AS termination_reason,
           CASE WHEN r.termination_reason = 'completed' AND r."StatusCode" <> 'Error' THEN 'ok' ELSE 'error' END AS status
    FROM spans r
    WHERE r.span_type = 'agent' AND r."SpanId" = r.run_id
      AND ($since::TIMESTAMP IS NULL OR r."Timestamp" >= $since)
      AND ($until::TIMESTAMP IS NULL OR r."Timestamp" < $until)
      AND ($agent::VARCHAR IS NULL OR r.agent = $agent)
      AND ($service::VARCHAR IS NULL OR r."ServiceName" = $service)
)
SELECT bucket,
       termination_reason,
       count(*) AS runs,
       count(*) FILTER (WHERE status = 'ok') AS ok,
       count(*) / sum(count(*)) OVER (PARTITION BY bucket) AS rate
FROM runs
GROUP BY bucket, termination_reason
ORDER BY bucket, termination_reason
