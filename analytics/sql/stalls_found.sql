-- Every stall in scope (rules in docs/detection.md), one row each, for stalls.sql and stalls_counts.sql.
-- Parameters: since, until, agent, service, now, stuck_after_seconds, stuck_max_age_seconds,
-- min_samples, min_backoff_ms, min_gap_ms, limit. members = stall_members of the runs in the window
-- (stalls_derived.sql reading run_members, or stalls_members.sql over the spans: the same rows),
-- not materialized: each use reads only its columns and rows (the ids of the slow calls only).
WITH calls AS NOT MATERIALIZED (
    SELECT trace_id, run_id, span_id, agent, span_type, what, call_ms AS duration_ms, started_at,
           ln(greatest(call_ms, 1)) AS lx
    FROM members WHERE call_ms IS NOT NULL
),
-- Robust thresholds (docs/detection.md): on log latency, the median and the median absolute
-- deviation, which slow calls cannot lift however many there are; per (agent, call), or across
-- agents for the calls some agent has too few of.
per_agent AS (
    SELECT agent, span_type, what, count(*) AS n_agent, quantile_cont(lx, 0.5) AS m_agent
    FROM calls GROUP BY agent, span_type, what
),
per_tool AS (
    SELECT span_type, what, count(*) AS n_all, quantile_cont(lx, 0.5) AS m_all
    FROM calls c
    SEMI JOIN (SELECT span_type, what FROM per_agent WHERE n_agent < $min_samples::BIGINT) f
        ON f.span_type = c.span_type AND f.what IS NOT DISTINCT FROM c.what
    GROUP BY span_type, what
),
centres AS (
    SELECT a.agent, a.span_type, a.what, a.n_agent >= $min_samples AS own,
           CASE WHEN a.n_agent >= $min_samples THEN a.m_agent WHEN t.n_all >= $min_samples THEN t.m_all END AS m
    FROM per_agent a
    LEFT JOIN per_tool t ON t.span_type = a.span_type AND t.what IS NOT DISTINCT FROM a.what
),
spread_agent AS (
    SELECT c.agent, c.span_type, c.what, quantile_cont(abs(c.lx - h.m), 0.5) AS mad
    FROM calls c
    JOIN centres h ON h.agent IS NOT DISTINCT FROM c.agent AND h.span_type = c.span_type AND h.what IS NOT DISTINCT FROM c.what
    WHERE h.own
    GROUP BY c.agent, c.span_type, c.what
),
spread_tool AS (
    SELECT c.span_type, c.what, quantile_cont(abs(c.lx - t.m_all), 0.5) AS mad
    FROM calls c
    JOIN per_tool t ON t.span_type = c.span_type AND t.what IS NOT DISTINCT FROM c.what
    WHERE t.n_all >= $min_samples
    GROUP BY c.span_type, c.what
),
thresholds AS (
    -- slow: above max(exp(m + 4 * max(1.4826 * MAD, 0.3)), exp(m) + 500 ms)
    SELECT h.agent, h.span_type, h.what, exp(h.m) AS typical_ms,
           greatest(exp(h.m + 4 * greatest(1.4826 * CASE WHEN h.own THEN a.mad ELSE t.mad END, 0.3)),
                    exp(h.m) + 500) AS limit_ms
    FROM centres h
    LEFT JOIN spread_agent a ON a.agent IS NOT DISTINCT FROM h.agent AND a.span_type = h.span_type AND a.what IS NOT DISTINCT FROM h.what
    LEFT JOIN spread_tool t ON t.span_type = h.span_type AND t.what IS NOT DISTINCT FROM h.what
    WHERE h.m IS NOT NULL
),
slow AS (
    SELECT c.trace_id, c.run_id, c.span_id, 'slow_call' AS kind, c.what AS tool, c.duration_ms, h.limit_ms AS expected_ms,
           c.started_at, c.agent
    FROM calls c
    JOIN thresholds h ON h.agent IS NOT DISTINCT FROM c.agent AND h.span_type = c.span_type AND h.what IS NOT DISTINCT FROM c.what
    WHERE c.duration_ms > 500 AND c.duration_ms > h.limit_ms
),
backoff AS (
    SELECT trace_id, run_id, span_id, 'backoff' AS kind, what AS tool, backoff_ms AS duration_ms,
           NULL::DOUBLE AS expected_ms, started_at, agent
    FROM members
    WHERE span_type = 'tool' AND backoff_ms >= $min_backoff_ms::DOUBLE
),
gaps AS (
    SELECT trace_id, run_id, span_id, 'idle_gap' AS kind, what AS tool,
           gap_ms AS duration_ms, $min_gap_ms::DOUBLE AS expected_ms, started_at, agent
    FROM members
    WHERE gap_ms > $min_gap_ms
),
in_flight AS (
    -- the span that ended last (of those ending together, the greatest id: both engines pick the same)
    SELECT "TraceId" AS trace_id, max(end_time) AS last_end, arg_max("SpanId", (end_time, "SpanId")) AS span_id,
           arg_max(coalesce(tool, "SpanName"), (end_time, "SpanId")) AS tool, max(agent) AS agent
    FROM spans s
    WHERE run_id IS NULL
      AND ($service::VARCHAR IS NULL OR "ServiceName" = $service)
      AND NOT EXISTS (SELECT 1 FROM spans r WHERE r."TraceId" = s."TraceId" AND r."SpanId" = r.run_id)
    GROUP BY "TraceId"
    -- a trace with no model and no tool call is no run (an agent's construction, say), nor stuck;
    -- nor is one whose root has arrived (it ended: a tool called outside any agent)
    -- (max of a condition: whether any span meets it, written so for both engines)
    HAVING max(span_type IN ('llm', 'tool')) AND NOT max("ParentSpanId" = '')
       AND ($agent::VARCHAR IS NULL OR max(agent = $agent))
),
stuck AS (
    SELECT trace_id, NULL::VARCHAR AS run_id, span_id, 'stuck' AS kind, tool,
           date_diff('microsecond', last_end, $now::TIMESTAMP) / 1e3 AS duration_ms,
           $stuck_after_seconds * 1e3 AS expected_ms, last_end AS started_at, agent
    FROM in_flight
    WHERE last_end < $now::TIMESTAMP - INTERVAL ($stuck_after_seconds::DOUBLE) SECOND
      AND last_end >= $now::TIMESTAMP - INTERVAL ($stuck_max_age_seconds::DOUBLE) SECOND
      AND ($since::TIMESTAMP IS NULL OR last_end >= $since)
      AND ($until::TIMESTAMP IS NULL OR last_end < $until)
)
SELECT * FROM slow
UNION ALL SELECT * FROM backoff
UNION ALL SELECT * FROM gaps
UNION ALL SELECT * FROM stuck
