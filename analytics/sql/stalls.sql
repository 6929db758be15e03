-- /api/v1/stalls: slow calls, retry backoff, idle gaps and stuck runs (rules in docs/detection.md).
-- Parameters: since, until, agent, service, now, stuck_after_seconds, stuck_max_age_seconds,
-- min_samples, min_backoff_ms, min_gap_ms, limit. members = stall_members of the runs in the window
-- (stalls_derived.sql reading run_members, or stalls_members.sql over the spans: the same rows),
-- not materialized: each use reads only its columns and rows (the ids of the slow calls only).
WITH calls AS NOT MATERIALIZED (
    SELECT trace_id, run_id, span_id, agent, span_type, what, call_ms AS duration_ms, started_at
    FROM members WHERE call_ms IS NOT NULL
),
per_agent AS (
    SELECT agent, span_type, what, count(*) AS n_agent, quantile_cont(duration_ms, 0.95) AS p95_agent
    FROM calls GROUP BY agent, span_type, what
),
per_tool AS (
    -- the p95 across agents, only for the calls some agent has too few of
    SELECT span_type, what, count(*) AS n_all, quantile_cont(duration_ms, 0.95) AS p95_all
    FROM calls c
    SEMI JOIN (SELECT span_type, what FROM per_agent WHERE n_agent < $min_samples) f
        ON f.span_type = c.span_type AND f.what IS NOT DISTINCT FROM c.what
    GROUP BY span_type, what
),
thresholds AS (
    -- the p95 each (agent, call) is judged against (aggregates joined back: a windowed quantile per call costs far more)
    SELECT a.agent, a.span_type, a.what,
           CASE WHEN a.n_agent >= $min_samples THEN a.p95_agent WHEN t.n_all >= $min_samples THEN t.p95_all END AS p95
    FROM per_agent a
    LEFT JOIN per_tool t ON t.span_type = a.span_type AND t.what IS NOT DISTINCT FROM a.what
),
slow AS (
    -- above max(3 x p95, p95 + 2 s) implies above 2 s: only those calls are joined back
    SELECT c.trace_id, c.run_id, c.span_id, 'slow_call' AS kind, c.what AS tool, c.duration_ms, h.p95 AS expected_ms, c.started_at
    FROM calls c
    JOIN thresholds h ON h.agent IS NOT DISTINCT FROM c.agent AND h.span_type = c.span_type AND h.what IS NOT DISTINCT FROM c.what
    WHERE c.duration_ms > 2000 AND h.p95 IS NOT NULL AND c.duration_ms > greatest(3 * h.p95, h.p95 + 2000)
),
backoff AS (
    SELECT trace_id, run_id, span_id, 'backoff' AS kind, what AS tool, backoff_ms AS duration_ms,
           NULL::DOUBLE AS expected_ms, started_at
    FROM members
    WHERE span_type = 'tool' AND backoff_ms >= $min_backoff_ms
),
gaps AS (
    SELECT trace_id, run_id, span_id, 'idle_gap' AS kind, what AS tool,
           gap_ms AS duration_ms, $min_gap_ms::DOUBLE AS expected_ms, started_at
    FROM members
    WHERE gap_ms > $min_gap_ms
),
in_flight AS (
    SELECT "TraceId" AS trace_id, max(end_time) AS last_end, arg_max("SpanId", end_time) AS span_id,
           arg_max(coalesce(tool, "SpanName"), end_time) AS tool
    FROM spans s
    WHERE run_id IS NULL
      AND ($service::VARCHAR IS NULL OR "ServiceName" = $service)
      AND NOT EXISTS (SELECT 1 FROM spans r WHERE r."TraceId" = s."TraceId" AND r."SpanId" = r.run_id)
    GROUP BY "TraceId"
    -- a trace with no model and no tool call is no run (an agent's construction, say), nor stuck;
    -- nor is one whose root has arrived (it ended: a tool called outside any agent)
    HAVING bool_or(span_type IN ('llm', 'tool')) AND NOT bool_or("ParentSpanId" = '')
       AND ($agent::VARCHAR IS NULL OR bool_or(agent = $agent))
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
    UNION ALL SELECT * FROM gaps
    UNION ALL SELECT * FROM stuck
)
WHERE $kind::VARCHAR IS NULL OR kind = $kind
ORDER BY kind = 'stuck' DESC, started_at DESC, trace_id, duration_ms DESC
LIMIT $limit
