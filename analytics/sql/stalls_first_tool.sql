-- Time from a run's start to its first tool call, per agent (runs with no tool call are left out).
-- members = the stall facts of the runs in the window (stalls_derived.sql or stalls_members.sql).
WITH first_tool AS (
    SELECT agent, min(at_ms) AS ms
    FROM members
    WHERE span_type = 'tool'
    GROUP BY trace_id, run_id, agent
)
SELECT agent, count(*) AS runs,
       round(quantile_cont(ms, 0.5), 3) AS p50_ms,
       round(quantile_cont(ms, 0.95), 3) AS p95_ms,
       round(max(ms), 3) AS max_ms
FROM first_tool
GROUP BY agent
ORDER BY p95_ms DESC, agent
