-- The run spans in scope, one row per run: started in [$since, $until) (a NULL bound is open), of
-- $agent and $service when given. Questions read it as a CTE (first line `-- ctes: runs=run_spans`).
SELECT "TraceId" AS trace_id, run_id, agent, "ServiceName" AS service, "Timestamp" AS started_at, end_time
FROM spans
WHERE span_type = 'agent' AND "SpanId" = run_id
  AND ($agent::VARCHAR IS NULL OR agent = $agent)
  AND ($service::VARCHAR IS NULL OR "ServiceName" = $service)
  AND ($since::TIMESTAMP IS NULL OR "Timestamp" >= $since)
  AND ($until::TIMESTAMP IS NULL OR "Timestamp" < $until)
