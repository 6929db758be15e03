-- Per run input / output / wasted tokens and their cost, most tokens first (run_facts and its stored
-- cost; loop_rows = loops_derived.sql; the wasted cost from the stored cost of the calls, run_calls as
-- priced_calls.sql holds them, only for the looping runs listed).
WITH wasted AS (
    -- the earliest loop of a run wastes the most: everything after it began
    SELECT trace_id, run_id, max(wasted_tokens) AS wasted_tokens, min(first_at) AS first_at
    FROM loop_rows GROUP BY trace_id, run_id
),
page AS (
    SELECT t.trace_id, t.run_id, t.agent, t.started_at, t.input_tokens, t.output_tokens, t.cost_usd,
           coalesce(w.wasted_tokens, 0) AS wasted_tokens, w.first_at
    FROM run_facts t
    LEFT JOIN wasted w ON w.trace_id = t.trace_id AND w.run_id = t.run_id
    WHERE ($agent::VARCHAR IS NULL OR t.agent = $agent)
      AND ($service::VARCHAR IS NULL OR t.service = $service)
      AND ($since::TIMESTAMP IS NULL OR t.started_at >= $since)
      AND ($until::TIMESTAMP IS NULL OR t.started_at < $until)
    ORDER BY t.input_tokens + t.output_tokens DESC, t.started_at DESC, t.trace_id
    LIMIT $limit
),
costs AS (
    -- wasted: the calls that began after the earliest loop began (the ones wasted_tokens counts);
    -- joined on the run's start as well, so the scan of run_calls skips all but the page's time range
    SELECT c.trace_id, c.run_id, sum(CASE WHEN c.ts > g.first_at THEN c.cost_usd END) AS wasted_cost_usd
    FROM page g
    JOIN run_calls c ON c.started_at = g.started_at AND c.trace_id = g.trace_id AND c.run_id = g.run_id
    WHERE g.wasted_tokens > 0
    GROUP BY c.trace_id, c.run_id
)
SELECT g.trace_id, g.run_id, g.agent, g.input_tokens, g.output_tokens, g.wasted_tokens,
       round(g.cost_usd, 9) AS cost_usd,
       CASE WHEN g.wasted_tokens = 0 THEN 0 ELSE round(k.wasted_cost_usd, 9) END AS wasted_cost_usd
FROM page g
LEFT JOIN costs k ON k.trace_id = g.trace_id AND k.run_id = g.run_id
ORDER BY g.input_tokens + g.output_tokens DESC, g.started_at DESC, g.trace_id
