-- /api/v1/stalls: slow calls, retry backoff, idle gaps and stuck runs (rules in docs/detection.md).
-- Parameters: since, until, agent, service, now, stuck_after_seconds, stuck_max_age_seconds,
-- min_samples, min_backoff_ms, min_gap_ms, limit.
WITH runs AS (
    SELECT "TraceId" AS trace_id, run_id, agent, "Timestamp" AS started_at, end_time
    FROM spans
    WHERE span_type = 'agent' AND "SpanId" = run_id
      AND ($agent::VARCHAR IS NULL OR agent = $agent)
      AND ($service::VARCHAR IS NULL OR "ServiceName" = $service)
      AND ($since::TIMESTAMP IS NULL OR "Timestamp" >= $since)
      AND ($until::TIMESTAMP IS NULL OR "Timestamp" < $until)
),
members AS MATERIALIZED (
    SELECT s."TraceId" AS trace_id, s.run_id, s."SpanId" AS span_id, s.span_type, s."Timestamp" AS ts, s.end_time,
           s."Duration" / 1e6 AS duration_ms, r.agent, r.started_at,
           CASE WHEN len(s."Events") > 0 THEN coalesce(list_sum(list_transform(
                list_filter(s."Events", lambda e: e."Name" = 'retry'),
                lambda e: coalesce(TRY_CAST(e."Attributes"['loopsight.backoff_ms'] AS DOUBLE), 0))), 0) ELSE 0 END AS backoff_ms,
           CASE WHEN s.span_type = 'tool' THEN s.tool WHEN s.span_type = 'llm' THEN s."SpanName" END AS what
    FROM spans s
    JOIN runs r ON s."TraceId" = r.trace_id AND s.run_id = r.run_id
    WHERE s."SpanId" <> s.run_id
),
calls AS MATERIALIZED (
    -- a call is judged on its own time: the backoff between attempts is reported as backoff
    SELECT * REPLACE (greatest(duration_ms - backoff_ms, 0) AS duration_ms) FROM members WHERE span_type IN ('tool', 'llm')
),
per_agent AS (
    SELECT agent, span_type, what, count(*) AS n_agent, quantile_cont(duration_ms, 0.95) AS p95_agent
    FROM calls GROUP BY agent, span_type, what
),
per_tool AS (
    SELECT span_type, what, count(*) AS n_all, quantile_cont(duration_ms, 0.95) AS p95_all
    FROM calls GROUP BY span_type, what
),
timed AS (
    -- the p95s are aggregates joined back (a windowed quantile per call costs far more)
    SELECT c.*, a.n_agent, a.p95_agent, t.n_all, t.p95_all
    FROM calls c
    JOIN per_agent a ON a.agent IS NOT DISTINCT FROM c.agent AND a.span_type = c.span_type AND a.what IS NOT DISTINCT FROM c.what
    JOIN per_tool t ON t.span_type = c.span_type AND t.what IS NOT DISTINCT FROM c.what
),
slow AS (
    SELECT trace_id, run_id, span_id, 'slow_call' AS kind, what AS tool, duration_ms, p95 AS expected_ms, started_at
    FROM (
        SELECT *, CASE WHEN n_agent >= $min_samples THEN p95_agent WHEN n_all >= $min_samples THEN p95_all END AS p95
        FROM timed
    )
    WHERE p95 IS NOT NULL AND duration_ms > greatest(3 * p95, p95 + 2000)
),
backoff AS (
    SELECT trace_id, run_id, span_id, 'backoff' AS kind, what AS tool, backoff_ms AS duration_ms,
           NULL::DOUBLE AS expected_ms, started_at
    FROM members
    WHERE span_type = 'tool' AND backoff_ms >= $min_backoff_ms
),
covered AS (
    SELECT *,
           max(end_time) OVER (PARTITION BY trace_id, run_id ORDER BY ts, span_id
                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_until
    FROM members
),
gaps AS (
    SELECT trace_id, run_id, span_id, 'idle_gap' AS kind, what AS tool,
           date_diff('microsecond', coalesce(covered_until, started_at), ts) / 1e3 AS duration_ms,
           $min_gap_ms::DOUBLE AS expected_ms, started_at
    FROM covered
    UNION ALL
    SELECT r.trace_id, r.run_id, r.run_id, 'idle_gap', NULL,
           date_diff('microsecond', max(m.end_time), r.end_time) / 1e3, $min_gap_ms::DOUBLE, r.started_at
    FROM runs r JOIN members m ON m.trace_id = r.trace_id AND m.run_id = r.run_id
    GROUP BY r.trace_id, r.run_id, r.end_time, r.started_at
),
in_flight AS (
    SELECT "TraceId" AS trace_id, max(end_time) AS last_end, arg_max("SpanId", end_time) AS span_id,
           arg_max(coalesce(tool, "SpanName"), end_time) AS tool
    FROM spans s
    WHERE run_id IS NULL
      AND ($service::VARCHAR IS NULL OR "ServiceName" = $service)
      AND NOT EXISTS (SELECT 1 FROM spans r WHERE r."TraceId" = s."TraceId" AND r.span_type = 'agent' AND r."SpanId" = r.run_id)
    GROUP BY "TraceId"
    HAVING ($agent::VARCHAR IS NULL OR bool_or(agent = $agent))
),
stuck AS (
    SELECT trace_id, NULL::VARCHAR AS run_id, span_id, 'stuck' AS kind, tool,
           date_diff('microsecond', last_end, $now::TIMESTAMP) / 1e3 AS duration_ms,
           $stuck_after_seconds * 1e3 AS expected_ms, last_end AS started_at
    FROM in_flight
    WHERE last_end < $now::TIMESTAMP - to_seconds($stuck_after_seconds::DOUBLE)
      AND last_end >= $now::TIMESTAMP - to_seconds($stuck_max_age_seconds::DOUBLE)
      AND ($since::TIMESTAMP IS NULL OR last_end >= $since)
      AND ($until::TIMESTAMP IS NULL OR last_end < $until)
)
SELECT trace_id, run_id, span_id, kind, tool, round(duration_ms, 3) AS duration_ms, round(expected_ms, 3) AS expected_ms
FROM (
    SELECT * FROM slow
    UNION ALL SELECT * FROM backoff
    UNION ALL SELECT * FROM gaps WHERE duration_ms > $min_gap_ms
    UNION ALL SELECT * FROM stuck
)
WHERE $kind::VARCHAR IS NULL OR kind = $kind
ORDER BY kind = 'stuck' DESC, started_at DESC, trace_id, duration_ms DESC
LIMIT $limit
