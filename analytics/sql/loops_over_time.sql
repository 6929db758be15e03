-- ctes: wasted=wasted_calls
-- Runs, looping runs and loops per kind in time buckets of the run start (loop_rows = loops_derived.sql);
-- the wasted tokens of each bucket those of the wasted calls of its runs, each call once (wasted_calls.sql).
WITH scope AS (
    SELECT time_bucket(INTERVAL ($bucket_seconds::BIGINT) SECOND, started_at) AS bucket, count(*) AS runs
    FROM run_facts
    WHERE ($agent::VARCHAR IS NULL OR agent = $agent)
      AND ($service::VARCHAR IS NULL OR service = $service)
      AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
      AND ($until::TIMESTAMP IS NULL OR started_at < $until)
    GROUP BY bucket
),
per_run AS (  -- each looping run once: its loops per kind
    SELECT trace_id, run_id, min(started_at) AS started_at,
           count(*) FILTER (WHERE kind = 'exact') AS exact,
           count(*) FILTER (WHERE kind = 'oscillation') AS oscillation,
           count(*) FILTER (WHERE kind = 'repeated_error') AS repeated_error,
           count(*) FILTER (WHERE kind = 'semantic') AS semantic,
           count(*) FILTER (WHERE kind = 'no_progress') AS no_progress
    FROM loop_rows
    GROUP BY trace_id, run_id
),
looped AS (
    SELECT time_bucket(INTERVAL ($bucket_seconds::BIGINT) SECOND, started_at) AS bucket,
           count(*) AS looping_runs, sum(exact) AS exact, sum(oscillation) AS oscillation,
           sum(repeated_error) AS repeated_error, sum(semantic) AS semantic, sum(no_progress) AS no_progress
    FROM per_run
    GROUP BY bucket
),
waste AS (
    SELECT time_bucket(INTERVAL ($bucket_seconds::BIGINT) SECOND, started_at) AS bucket, sum(wasted_tokens) AS wasted_tokens
    FROM wasted
    GROUP BY bucket
)
SELECT s.bucket, s.runs, coalesce(l.looping_runs, 0) AS looping_runs,
       coalesce(l.looping_runs, 0) / s.runs AS loop_rate,
       coalesce(l.exact, 0) AS exact, coalesce(l.oscillation, 0) AS oscillation,
       coalesce(l.repeated_error, 0) AS repeated_error, coalesce(l.semantic, 0) AS semantic,
       coalesce(l.no_progress, 0) AS no_progress, coalesce(w.wasted_tokens, 0) AS wasted_tokens
FROM scope s
LEFT JOIN looped l USING (bucket)
LEFT JOIN waste w USING (bucket)
ORDER BY s.bucket
