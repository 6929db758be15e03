-- ClickHouse variant of ../terminations.sql: buckets aligned to the Unix epoch.
WITH runs AS (
    SELECT fromUnixTimestamp64Micro(
               intDiv(toUnixTimestamp64Micro(r.Timestamp), {bucket_seconds:Int64} * 1000000) * {bucket_seconds:Int64} * 1000000, 'UTC') AS bucket,
           ifNull(r.termination_reason, 'unknown') AS termination_reason,
           if(r.termination_reason = 'completed' AND r.StatusCode != 'Error', 'ok', 'error') AS status
    FROM typed_spans r
    WHERE r.span_type = 'agent' AND r.SpanId = r.run_id
      AND ({since:Nullable(DateTime64(6, 'UTC'))} IS NULL OR r.Timestamp >= {since:Nullable(DateTime64(6, 'UTC'))})
      AND ({until:Nullable(DateTime64(6, 'UTC'))} IS NULL OR r.Timestamp < {until:Nullable(DateTime64(6, 'UTC'))})
      AND ({agent:Nullable(String)} IS NULL OR r.agent = {agent:Nullable(String)})
      AND ({service:Nullable(String)} IS NULL OR r.ServiceName = {service:Nullable(String)})
)
SELECT bucket,
       termination_reason,
       count() AS runs,
       countIf(status = 'ok') AS ok,
       count() / sum(count()) OVER (PARTITION BY bucket) AS rate
FROM runs
GROUP BY bucket, termination_reason
ORDER BY bucket, termination_reason
