-- Runs started in [$since, $until) that hold a span the loop guard marked (loop_kind set).
SELECT count(*) AS runs
FROM run_facts
WHERE started_at >= $since::TIMESTAMP AND started_at < $until::TIMESTAMP
  AND ($agent::VARCHAR IS NULL OR agent = $agent)
  AND ($service::VARCHAR IS NULL OR service = $service)
  AND loop_marks > 0
