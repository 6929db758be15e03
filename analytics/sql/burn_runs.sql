-- ctes: costs=loop_costs
-- Per run input / output / wasted tokens and their cost, most tokens first (run_facts and its stored
-- cost; loop_rows = loops_derived.sql; the wasted cost that of the run's loop that wasted the most,
-- as loop_costs.sql prices it).
WITH wasted AS (
    -- the earliest loop of a run wastes the most: everything after it began
    SELECT trace_id, run_id, max(wasted_tokens) AS wasted_tokens
    FROM loop_rows GROUP BY trace_id, run_id
),
page AS (
    SELECT t.trace_id, t.run_id, t.agent, t.started_at, t.input_tokens, t.output_tokens, t.cost_usd,
           coalesce(w.wasted_tokens, 0) AS wasted_tokens
    FROM run_facts t
    LEFT JOIN wasted w ON w.trace_id = t.trace_id AND w.run_id = t.run_id
    WHERE ($agent::VARCHAR IS NULL OR t.agent = $agent)
      AND ($service::VARCHAR IS NULL OR t.service = $service)
      AND ($since::TIMESTAMP IS NULL OR t.started_at >= $since)
      AND ($until::TIMESTAMP IS NULL OR t.started_at < $until)
    ORDER BY t.input_tokens + t.output_tokens DESC, t.started_at DESC, t.trace_id, t.run_id
    LIMIT $limit
)
SELECT g.trace_id, g.run_id, g.agent, g.input_tokens, g.output_tokens, g.wasted_tokens,
       round(g.cost_usd, 9) AS cost_usd,
       CASE WHEN g.wasted_tokens = 0 THEN 0 ELSE k.wasted_cost_usd END AS wasted_cost_usd
FROM page g
LEFT JOIN costs k ON k.trace_id = g.trace_id AND k.run_id = g.run_id AND k.wasted_tokens = g.wasted_tokens
ORDER BY g.input_tokens + g.output_tokens DESC, g.started_at DESC, g.trace_id, g.run_id
