-- ctes: session_loops=loops_derived
-- The detected loops of one session's runs ($session): each run's own and those across its runs
-- (scope session), as the CTE loop_rows of the loop questions when a session is asked for.
SELECT * FROM session_loops WHERE session_id = $session
