-- ctes: filtered=runs_filtered
-- Runs, newest first, from the per-run rollups the deriver keeps (run_facts, filled by
-- stores/sql/derive_runs.sql by the rules of loopsight.vocabulary). ``status`` is the rule
-- RUN_STATUS of loopsight.vocabulary ('error' exactly where the run failed); how it ended is
-- ``termination_reason``.
-- ``loops``: the loops detected in the run (run_loops, as the Loops page lists them).
WITH page AS (
    SELECT trace_id, run_id, agent, service, started_at,
           duration / 1e6 AS duration_ms,
           {{run_status}} AS status,
           termination_reason, steps, llm_calls, tool_calls, tool_errors, retries,
           input_tokens, output_tokens, session_id, arguments_captured
    FROM filtered
    ORDER BY started_at DESC, trace_id
    LIMIT $limit OFFSET $offset
),
loop_counts AS (  -- after the page is cut: counting every run's loops first cost ~40 ms at 100k runs
    SELECT trace_id, run_id, count(*) AS loops
    FROM run_loops
    WHERE trace_id IN (SELECT trace_id FROM page)
    GROUP BY trace_id, run_id
)
SELECT p.*, coalesce(c.loops, 0) AS loops
FROM page p
LEFT JOIN loop_counts c ON c.trace_id = p.trace_id AND c.run_id = p.run_id
ORDER BY p.started_at DESC, p.trace_id
