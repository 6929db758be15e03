-- ctes: loop_rows=loops_derived, run_spans=run_spans
-- ClickHouse variant of ../loops_over_time.sql: buckets aligned to the Unix epoch.
WITH scope AS (
    SELECT fromUnixTimestamp64Micro(
               intDiv(toUnixTimestamp64Micro(r.started_at), {bucket_seconds:Int64} * 1000000) * {bucket_seconds:Int64} * 1000000, 'UTC') AS bucket,
           count() AS runs
    FROM run_spans r
    GROUP BY bucket
),
looped AS (
    SELECT fromUnixTimestamp64Micro(
               intDiv(toUnixTimestamp64Micro(started_at), {bucket_seconds:Int64} * 1000000) * {bucket_seconds:Int64} * 1000000, 'UTC') AS bucket,
           uniqExact(trace_id, run_id) AS looping_runs,
           countIf(kind = 'exact') AS exact,
           countIf(kind = 'oscillation') AS oscillation,
           countIf(kind = 'repeated_error') AS repeated_error,
           countIf(kind = 'semantic') AS semantic,
           sum(wasted_tokens) AS wasted_tokens
    FROM loop_rows
    GROUP BY bucket
)
SELECT s.bucket AS bucket, s.runs AS runs, ifNull(l.looping_runs, 0) AS looping_runs,
       ifNull(l.looping_runs, 0) / s.runs AS loop_rate,
       ifNull(l.exact, 0) AS exact, ifNull(l.oscillation, 0) AS oscillation,
       ifNull(l.repeated_error, 0) AS repeated_error, ifNull(l.semantic, 0) AS semantic,
       ifNull(l.wasted_tokens, 0) AS wasted_tokens
FROM scope s
LEFT JOIN looped l ON l.bucket = s.bucket
ORDER BY s.bucket
SETTINGS join_use_nulls = 1
