-- ctes: filtered=runs_filtered
-- Runs per time bucket and termination reason, with each reason's share of the bucket, over the runs
-- the runs list's filters keep (runs_filtered.sql: one row per run of run_facts). Buckets are aligned
-- to the Unix epoch; a run falls in the bucket of its start.
WITH runs AS (
    SELECT time_bucket(INTERVAL ($bucket_seconds::BIGINT) SECOND, started_at, TIMESTAMP '1970-01-01') AS bucket,
           coalesce(termination_reason, 'unknown') AS termination_reason,
           CASE WHEN ok THEN 'ok' ELSE 'error' END AS status
    FROM filtered
)
SELECT bucket,
       termination_reason,
       count(*) AS runs,
       count(*) FILTER (WHERE status = 'ok') AS ok,
       count(*) / sum(count(*)) OVER (PARTITION BY bucket) AS rate
FROM runs
GROUP BY bucket, termination_reason
ORDER BY bucket, termination_reason
