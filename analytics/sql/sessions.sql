-- /api/v1/sessions: the sessions whose runs started in scope (or the one asked for), most recent first: their runs,
-- first and last run start, tokens and their stored cost (run_facts: the sum of the runs' priced
-- calls; NULL when none is priced) with the calls left unpriced, and loops (each run's own and those
-- across its runs, which run_loops keeps on the run of their last call).
WITH scoped AS (
    SELECT trace_id, run_id, session_id, started_at, input_tokens, output_tokens, cost_usd, unpriced_calls
    FROM run_facts
    WHERE session_id IS NOT NULL
      AND ($session::VARCHAR IS NULL OR session_id = $session)
      AND ($agent::VARCHAR IS NULL OR agent = $agent)
      AND ($service::VARCHAR IS NULL OR service = $service)
      AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
      AND ($until::TIMESTAMP IS NULL OR started_at < $until)
),
loops AS (
    SELECT s.session_id, count(*) AS loops
    FROM run_loops l
    JOIN scoped s ON s.trace_id = l.trace_id AND s.run_id = l.run_id
    GROUP BY s.session_id
)
SELECT s.session_id, count(*) AS runs, min(s.started_at) AS first_started_at, max(s.started_at) AS last_started_at,
       sum(s.input_tokens) AS input_tokens, sum(s.output_tokens) AS output_tokens,
       round(sum(s.cost_usd), 9) AS cost_usd, sum(coalesce(s.unpriced_calls, 0)) AS unpriced_calls,
       coalesce(any_value(l.loops), 0) AS loops
FROM scoped s
LEFT JOIN loops l ON l.session_id = s.session_id
GROUP BY s.session_id
ORDER BY last_started_at DESC, s.session_id
LIMIT $limit
