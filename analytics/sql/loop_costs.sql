-- The wasted cost of the loops of the runs in scope (loop_rows = loops_derived.sql, $kind when
-- given): the cost of the model calls its wasted_tokens counts (loops_core.sql), at their stored
-- cost (run_calls, as priced_calls.sql holds them; NULL when none of them is priced): those that
-- began after the loop's first call began, in the loop's run, or for a loop across a session's runs
-- in every run of that session. One row per run and wasted tokens: loops of a run with equal wasted
-- tokens waste the same calls, so the same cost. The runs are joined on their start too (the scan
-- of run_calls skips the row groups of other times), then summed.
WITH loops AS (
    SELECT DISTINCT trace_id, run_id, started_at, first_at, wasted_tokens, scope, session_id
    FROM loop_rows
    WHERE wasted_tokens > 0 AND ($kind::VARCHAR IS NULL OR kind = $kind)
),
wasting AS (
    -- each loop with the runs whose calls it wasted: its own, or its session's
    SELECT trace_id, run_id, first_at, wasted_tokens, scope,
           trace_id AS call_trace, run_id AS call_run, started_at AS call_started
    FROM loops
    WHERE scope = 'run'
    UNION ALL
    SELECT l.trace_id, l.run_id, l.first_at, l.wasted_tokens, l.scope,
           f.trace_id AS call_trace, f.run_id AS call_run, f.started_at AS call_started
    FROM loops l
    JOIN run_facts f ON f.session_id = l.session_id
    WHERE l.scope = 'session'
),
per_loop AS (
    SELECT w.trace_id, w.run_id, w.first_at, w.scope, any_value(w.wasted_tokens) AS wasted_tokens,
           sum(c.cost_usd) AS cost_usd
    FROM wasting w
    JOIN run_calls c ON c.started_at = w.call_started AND c.trace_id = w.call_trace AND c.run_id = w.call_run
    WHERE c.ts > w.first_at
      -- the loops' traces first: ClickHouse then reads only their granules (325 -> 51 ms at 500 k spans)
      AND c.trace_id IN (SELECT call_trace FROM wasting)
    GROUP BY w.trace_id, w.run_id, w.first_at, w.scope
)
SELECT trace_id, run_id, wasted_tokens, round(max(cost_usd), 9) AS wasted_cost_usd
FROM per_loop
GROUP BY trace_id, run_id, wasted_tokens
