-- Runs per time bucket and termination reason, with each reason's share of the bucket.
-- One row per run in run_facts. Buckets are aligned to the Unix epoch; a run falls in the bucket of its start.
WITH runs AS (
    SELECT time_bucket(to_seconds($bucket_seconds::BIGINT), started_at, TIMESTAMP '1970-01-01') AS bucket,
           coalesce(termination_reason, 'unknown') AS termination_reason,
           CASE WHEN ok THEN 'ok' ELSE 'error' END AS status
    FROM run_facts
    WHERE ($since::TIMESTAMP IS NULL OR started_at >= $since)
      AND ($until::TIMESTAMP IS NULL OR started_at < $until)
      AND ($agent::VARCHAR IS NULL OR agent = $agent)
      AND ($service::VARCHAR IS NULL OR service = $service)
)
SELECT bucket,
       termination_reason,
       count(*) AS runs,
       count(*) FILTER (WHERE status = 'ok') AS ok,
       count(*) / sum(count(*)) OVER (PARTITION BY bucket) AS rate
FROM runs
GROUP BY bucket, termination_reason
ORDER BY bucket, termination_reason
