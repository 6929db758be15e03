-- Loop rate: runs with at least one loop / runs in scope (loop_rows = loops_derived.sql).
WITH scope AS (
    SELECT count(*) AS runs
    FROM run_facts
    WHERE ($agent::VARCHAR IS NULL OR agent = $agent)
      AND ($service::VARCHAR IS NULL OR service = $service)
      AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
      AND ($until::TIMESTAMP IS NULL OR started_at < $until)
)
SELECT scope.runs,
       (SELECT count(*) FROM (SELECT DISTINCT trace_id, run_id FROM loop_rows)) AS looping_runs
FROM scope
