-- Loop rate: runs with at least one loop / runs in scope (loop_rows = loops_core.sql).
WITH scope AS (
    SELECT count(*) AS runs
    FROM spans
    WHERE span_type = 'agent' AND "SpanId" = run_id
      AND ($agent::VARCHAR IS NULL OR agent = $agent)
      AND ($service::VARCHAR IS NULL OR "ServiceName" = $service)
      AND ($since::TIMESTAMP IS NULL OR "Timestamp" >= $since)
      AND ($until::TIMESTAMP IS NULL OR "Timestamp" < $until)
)
SELECT scope.runs,
       (SELECT count(*) FROM (SELECT DISTINCT trace_id, run_id FROM loop_rows)) AS looping_runs
FROM scope
