-- ctes: run_spans=run_spans
-- ClickHouse variant of ../terminations.sql: buckets aligned to the Unix epoch.
SELECT fromUnixTimestamp64Micro(
           intDiv(toUnixTimestamp64Micro(r.started_at), {bucket_seconds:Int64} * 1000000) * {bucket_seconds:Int64} * 1000000, 'UTC') AS bucket,
       ifNull(r.termination_reason, 'unknown') AS termination_reason,
       count() AS runs,
       countIf(r.termination_reason = 'completed' AND r.status_code != 'Error') AS ok,
       count() / sum(count()) OVER (PARTITION BY bucket) AS rate
FROM run_spans r
GROUP BY bucket, termination_reason
ORDER BY bucket, termination_reason
