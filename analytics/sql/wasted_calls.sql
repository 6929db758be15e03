-- The model calls the loops in scope wasted, each call once, summed per run the calls belong to
-- (loop_rows = loops_derived.sql, $kind when given). A loop wastes the calls begun after its first
-- call began, in its run, or for a loop across a session's runs in every run of that session (as
-- loops_core.sql counts a loop's wasted_tokens): a run's own loop and its session's loop waste the
-- same calls, counted once. Tokens and stored cost (run_calls; NULL cost when none is priced); the
-- runs are joined on their start too (the scan of run_calls skips the row groups of other times).
WITH wasting AS (
    SELECT trace_id, run_id, started_at, first_at
    FROM loop_rows
    WHERE scope = 'run' AND ($kind::VARCHAR IS NULL OR kind = $kind)
    UNION ALL
    SELECT f.trace_id, f.run_id, f.started_at, l.first_at
    FROM loop_rows l
    JOIN run_facts f ON f.session_id = l.session_id
    WHERE l.scope = 'session' AND ($kind::VARCHAR IS NULL OR l.kind = $kind)
),
starts AS (
    -- the loops of one run waste its calls from the earliest first call on
    SELECT trace_id, run_id, any_value(started_at) AS started_at, min(first_at) AS since
    FROM wasting
    GROUP BY trace_id, run_id
)
SELECT s.trace_id, s.run_id, s.started_at,
       sum(c.input_tokens + c.output_tokens) AS wasted_tokens, sum(c.cost_usd) AS wasted_cost_usd
FROM starts s
JOIN run_calls c ON c.started_at = s.started_at AND c.trace_id = s.trace_id AND c.run_id = s.run_id
WHERE c.ts > s.since
GROUP BY s.trace_id, s.run_id, s.started_at
