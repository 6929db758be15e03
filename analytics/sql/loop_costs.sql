-- The wasted cost of the loops of the runs in scope (loop_rows = loops_derived.sql, $kind when
-- given): the cost of the model calls of the loop's run that began after its first call began, the
-- calls its wasted_tokens counts, at their stored cost (run_calls, as priced_calls.sql holds them;
-- NULL when none of them is priced). One row per run and wasted tokens: loops of a run with equal wasted tokens waste the same
-- calls, so the same cost. The loops' runs are joined first (on their start too: the scan of
-- run_calls skips the row groups of other times), then summed.
WITH loops AS (
    SELECT DISTINCT trace_id, run_id, started_at, first_at, wasted_tokens
    FROM loop_rows
    WHERE wasted_tokens > 0 AND ($kind::VARCHAR IS NULL OR kind = $kind)
),
per_loop AS (
    SELECT l.trace_id, l.run_id, l.first_at, any_value(l.wasted_tokens) AS wasted_tokens, sum(c.cost_usd) AS cost_usd
    FROM loops l
    JOIN run_calls c ON c.started_at = l.started_at AND c.trace_id = l.trace_id AND c.run_id = l.run_id
    WHERE c.ts > l.first_at
      -- the loops' traces first: ClickHouse then reads only their granules (325 -> 51 ms at 500 k spans)
      AND c.trace_id IN (SELECT trace_id FROM loops)
    GROUP BY l.trace_id, l.run_id, l.first_at
)
SELECT trace_id, run_id, wasted_tokens, round(max(cost_usd), 9) AS wasted_cost_usd
FROM per_loop
GROUP BY trace_id, run_id, wasted_tokens
