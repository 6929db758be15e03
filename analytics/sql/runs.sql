-- ctes: filtered=runs_filtered
-- Runs, newest first, from the per-run rollups the deriver keeps (run_facts, filled by
-- stores/sql/derive_runs.sql by the rules of loopsight.vocabulary). ``status`` is the rule
-- RUN_STATUS of loopsight.vocabulary ('error' exactly where the run failed); how it ended is
-- ``termination_reason``.
-- ``loops``: the loops detected in the run (run_loops, as the Loops page lists them).
-- ``cost_usd``: its model calls priced, as stored (run_facts; priced_calls.sql), NULL when none is
-- priced; ``unpriced_calls``: its calls with tokens whose model has no price.
-- page is read twice below: materialized, cut once (DuckDB would inline it into each)
WITH page AS MATERIALIZED (
    SELECT trace_id, run_id, agent, service, started_at,
           duration / 1e6 AS duration_ms,
           {{run_status}} AS status,
           termination_reason, steps, llm_calls, tool_calls, tool_errors, retries,
           input_tokens, output_tokens, session_id, arguments_captured,
           coalesce(cache_read_tokens, 0) AS cache_read_input_tokens,
           coalesce(cache_write_tokens, 0) AS cache_write_input_tokens,
           cost_usd AS run_cost_usd, coalesce(unpriced_calls, 0) AS run_unpriced_calls
    FROM filtered
    ORDER BY started_at DESC, trace_id, run_id
    LIMIT $limit OFFSET $offset
),
loop_counts AS (  -- after the page is cut: counting every run's loops first cost ~40 ms at 100k runs
    SELECT trace_id, run_id, count(*) AS loops
    FROM run_loops
    WHERE trace_id IN (SELECT trace_id FROM page)
    GROUP BY trace_id, run_id
)
SELECT p.trace_id, p.run_id, p.agent, p.service, p.started_at, p.duration_ms, p.status, p.termination_reason,
       p.steps, p.llm_calls, p.tool_calls, p.tool_errors, p.retries, p.input_tokens, p.output_tokens,
       p.session_id, p.arguments_captured, p.cache_read_input_tokens, p.cache_write_input_tokens,
       coalesce(c.loops, 0) AS loops, round(p.run_cost_usd, 9) AS cost_usd, p.run_unpriced_calls AS unpriced_calls
FROM page p
LEFT JOIN loop_counts c ON c.trace_id = p.trace_id AND c.run_id = p.run_id
ORDER BY p.started_at DESC, p.trace_id, p.run_id
