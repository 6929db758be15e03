-- ctes: runs=run_spans
-- The stall facts of every member span of the runs in scope, one row each (the table run_members:
-- analytics/derive.py runs this over the traces a commit touched): the call's own time (duration
-- minus its retry backoff; tool and model calls only), its retry backoff, the idle gap before it
-- (since the run's start or the latest end among the members that started before it) and its
-- start offset in the run. The run span's own row (span_id = run_id) holds the idle gap after
-- the last member. stalls.sql judges these rows against the cross-run p95s of the window. An llm
-- span whose parent is an llm span (another instrumentation's chat span inside our model call)
-- is part of that call: no call time of its own.
WITH members AS MATERIALIZED (
    SELECT s."TraceId" AS trace_id, s.run_id, hash(s."TraceId", s.run_id) AS rk, s."SpanId" AS span_id, s."ParentSpanId" AS parent_id, s.span_type,
           s."Timestamp" AS ts, s.end_time,
           s."Duration" / 1e6 AS duration_ms, r.agent, r.service, r.started_at,
           CASE WHEN len(s."Events") > 0 THEN coalesce(list_sum(list_transform(
                list_filter(s."Events", lambda e: e."Name" = 'retry'),
                lambda e: coalesce(TRY_CAST(e."Attributes"['loopsight.backoff_ms'] AS DOUBLE), 0))), 0) ELSE 0 END AS backoff_ms,
           CASE WHEN s.span_type = 'tool' THEN s.tool WHEN s.span_type = 'llm' THEN s."SpanName" END AS what
    FROM spans s
    JOIN runs r ON s."TraceId" = r.trace_id AND s.run_id = r.run_id
    WHERE s."SpanId" <> s.run_id
),
nested AS (
    SELECT c.trace_id, c.span_id
    FROM members c JOIN members p ON p.trace_id = c.trace_id AND p.span_id = c.parent_id
    WHERE c.span_type = 'llm' AND p.span_type = 'llm'
),
covered AS (
    SELECT *,
           max(end_time) OVER (PARTITION BY rk ORDER BY ts, span_id
                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_until
    FROM members
)
SELECT c.trace_id, c.run_id, c.span_id, agent, service, started_at, span_type, what,
       -- a call is judged on its own time: the backoff between attempts is reported as backoff
       CASE WHEN span_type IN ('tool', 'llm') AND n.span_id IS NULL THEN greatest(duration_ms - backoff_ms, 0) END AS call_ms,
       backoff_ms,
       date_diff('microsecond', coalesce(covered_until, started_at), ts) / 1e3 AS gap_ms,
       date_diff('microsecond', started_at, ts) / 1e3 AS at_ms
FROM covered c
LEFT JOIN nested n ON n.trace_id = c.trace_id AND n.span_id = c.span_id
UNION ALL
SELECT r.trace_id, r.run_id, r.run_id, r.agent, r.service, r.started_at, 'agent', NULL, NULL, 0,
       date_diff('microsecond', m.last_end, r.end_time) / 1e3, 0
FROM runs r
JOIN (SELECT trace_id, run_id, max(end_time) AS last_end FROM members GROUP BY trace_id, run_id) m
  ON m.trace_id = r.trace_id AND m.run_id = r.run_id
