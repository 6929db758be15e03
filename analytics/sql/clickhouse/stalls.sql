-- ctes: members=stalls_members_derived
-- ClickHouse variant of ../stalls.sql (same rules, same columns and order). The run members
-- (with each one's covered_until and its run's end) are kept per trace in loopsight_run_members.
WITH timed AS (
    -- a call is judged on its own time: the backoff between attempts is reported as backoff
    SELECT *,
           count() OVER (PARTITION BY agent, span_type, what) AS n_agent,
           quantileExactInclusive(0.95)(own_ms) OVER (PARTITION BY agent, span_type, what) AS p95_agent,
           count() OVER (PARTITION BY span_type, what) AS n_all,
           quantileExactInclusive(0.95)(own_ms) OVER (PARTITION BY span_type, what) AS p95_all
    FROM (SELECT *, greatest(duration_ms - backoff_ms, 0.) AS own_ms FROM members WHERE span_type IN ('tool', 'llm') AND NOT nested)
),
slow AS (
    SELECT trace_id, toNullable(run_id) AS run_id, span_id, 'slow_call' AS kind, what AS tool, own_ms AS duration_ms,
           toNullable(p95) AS expected_ms, started_at
    FROM (
        SELECT *, multiIf(n_agent >= {min_samples:Int64}, toNullable(p95_agent), n_all >= {min_samples:Int64}, toNullable(p95_all), NULL) AS p95
        FROM timed
    )
    WHERE p95 IS NOT NULL AND own_ms > greatest(3 * p95, p95 + 2000)
),
backoff AS (
    SELECT trace_id, toNullable(run_id) AS run_id, span_id, 'backoff' AS kind, what AS tool, backoff_ms AS duration_ms,
           CAST(NULL AS Nullable(Float64)) AS expected_ms, started_at
    FROM members
    WHERE span_type = 'tool' AND backoff_ms >= {min_backoff_ms:Float64}
),
gaps AS (
    SELECT trace_id, toNullable(run_id) AS run_id, span_id, 'idle_gap' AS kind, what AS tool,
           dateDiff('microsecond', coalesce(covered_until, started_at), ts) / 1e3 AS duration_ms,
           toNullable({min_gap_ms:Float64}) AS expected_ms, started_at
    FROM members
    UNION ALL
    SELECT trace_id, toNullable(run_id), run_id, 'idle_gap', CAST(NULL AS Nullable(String)),
           dateDiff('microsecond', max(end_time), any(run_end)) / 1e3, toNullable({min_gap_ms:Float64}), any(started_at)
    FROM members
    GROUP BY trace_id, run_id
),
in_flight AS (
    SELECT TraceId AS trace_id, max(end_time) AS last_end, argMax(SpanId, end_time) AS span_id,
           argMax(coalesce(tool, SpanName), end_time) AS tool
    FROM typed_spans
    WHERE run_id IS NULL
      AND ({service:Nullable(String)} IS NULL OR ServiceName = {service:Nullable(String)})
      AND TraceId NOT IN (SELECT TraceId FROM typed_spans WHERE span_type = 'agent' AND SpanId = run_id)
    GROUP BY TraceId
    HAVING {agent:Nullable(String)} IS NULL OR countIf(agent = {agent:Nullable(String)}) > 0
),
stuck AS (
    SELECT trace_id, CAST(NULL AS Nullable(String)) AS run_id, span_id, 'stuck' AS kind, toNullable(tool) AS tool,
           dateDiff('microsecond', last_end, {now:DateTime64(6, 'UTC')}) / 1e3 AS duration_ms,
           toNullable({stuck_after_seconds:Float64} * 1e3) AS expected_ms, last_end AS started_at
    FROM in_flight
    WHERE last_end < {now:DateTime64(6, 'UTC')} - toIntervalMicrosecond(toInt64({stuck_after_seconds:Float64} * 1e6))
      AND last_end >= {now:DateTime64(6, 'UTC')} - toIntervalMicrosecond(toInt64({stuck_max_age_seconds:Float64} * 1e6))
      AND ({since:Nullable(DateTime64(6, 'UTC'))} IS NULL OR last_end >= {since:Nullable(DateTime64(6, 'UTC'))})
      AND ({until:Nullable(DateTime64(6, 'UTC'))} IS NULL OR last_end < {until:Nullable(DateTime64(6, 'UTC'))})
)
SELECT trace_id, run_id, span_id, kind, tool, round(duration_ms, 3) AS duration_ms, round(expected_ms, 3) AS expected_ms
FROM (
    SELECT * FROM slow
    UNION ALL SELECT * FROM backoff
    UNION ALL SELECT * FROM gaps WHERE duration_ms > {min_gap_ms:Float64}
    UNION ALL SELECT * FROM stuck
)
WHERE {kind:Nullable(String)} IS NULL OR kind = {kind:Nullable(String)}
ORDER BY kind = 'stuck' DESC, started_at DESC, trace_id, duration_ms DESC
LIMIT {limit:UInt64}
