-- The runs of the sessions in scope (the registered relation derive_sessions), whose calls are
-- one sequence per session in start order (session scope): read by loops_core.sql as the CTE runs.
SELECT trace_id, run_id, agent, service, started_at, session_id, hash(session_id) AS rk, 'session' AS scope
FROM run_facts
WHERE session_id IN (SELECT session_id FROM derive_sessions)
