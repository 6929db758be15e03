-- The runs the runs list's filters keep (run_facts), for runs.sql and runs_count.sql.
SELECT *
FROM run_facts
WHERE ($trace_id::VARCHAR IS NULL OR trace_id = $trace_id)
  AND ($trace_ids::VARCHAR[] IS NULL OR list_contains($trace_ids::VARCHAR[], trace_id))
  AND ($run_ids::VARCHAR[] IS NULL OR list_contains($run_ids::VARCHAR[], run_id))
  AND ($agent::VARCHAR IS NULL OR agent = $agent)
  AND ($service::VARCHAR IS NULL OR service = $service)
  AND ($session::VARCHAR IS NULL OR session_id = $session)
  AND ($termination_reason::VARCHAR IS NULL OR termination_reason = $termination_reason)
  AND ($status::VARCHAR IS NULL OR ({{run_status}}) = $status)
  AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
  AND ($until::TIMESTAMP IS NULL OR started_at < $until)
  AND ($tool::VARCHAR IS NULL OR list_contains(tools, $tool))
  AND ($min_tokens::BIGINT IS NULL OR input_tokens + output_tokens >= $min_tokens)
