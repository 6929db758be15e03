-- The runs in scope, one row per run: started in [$since, $until) (a NULL bound is open), of
-- $agent and $service when given, with the agent their rules decided (run_facts, which a pass
-- fills first). Derivations read it as a CTE (first line `-- ctes: runs=run_spans`).
SELECT trace_id, run_id, agent, service, started_at, started_at + to_microseconds(duration // 1000) AS end_time
FROM run_facts
WHERE ($agent::VARCHAR IS NULL OR agent = $agent)
  AND ($service::VARCHAR IS NULL OR service = $service)
  AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
  AND ($until::TIMESTAMP IS NULL OR started_at < $until)
  -- only runs with spans in scope (a derivation's scope is a few traces: not every stored run)
  AND trace_id IN (SELECT DISTINCT "TraceId" FROM spans)
