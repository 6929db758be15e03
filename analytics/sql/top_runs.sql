-- The runs that spent the most tokens (input + output over their llm spans), biggest first.
SELECT trace_id, run_id, input_tokens + output_tokens AS tokens
FROM run_facts
WHERE input_tokens + output_tokens > 0
  AND ($agent::VARCHAR IS NULL OR agent = $agent)
  AND ($service::VARCHAR IS NULL OR service = $service)
  AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
  AND ($until::TIMESTAMP IS NULL OR started_at < $until)
ORDER BY tokens DESC, trace_id, run_id
LIMIT $limit
