-- Runs, newest first, from the per-run rollups the writer keeps (run_facts, filled by
-- derive_runs.sql for the traces each commit touches). A run is an invoke_agent span that is
-- its own run (no agent ancestor). Run status rule (the same in every question): 'ok' when the
-- run completed and its span is not an error, else 'error'. ``loops``: the loops detected in the
-- run (run_loops, as the Loops page lists them), not only the loop guard's marks.
SELECT trace_id, run_id, agent, service, started_at,
       duration / 1e6 AS duration_ms,
       CASE WHEN ok THEN 'ok' ELSE 'error' END AS status,
       termination_reason, steps, llm_calls, tool_calls, tool_errors, retries,
       input_tokens, output_tokens,
       (SELECT count(*) FROM run_loops l WHERE l.trace_id = f.trace_id AND l.run_id = f.run_id) AS loops
FROM run_facts f
WHERE ($trace_id::VARCHAR IS NULL OR trace_id = $trace_id)
  AND ($run_ids::VARCHAR[] IS NULL OR list_contains($run_ids::VARCHAR[], run_id))
  AND ($agent::VARCHAR IS NULL OR agent = $agent)
  AND ($service::VARCHAR IS NULL OR service = $service)
  AND ($termination_reason::VARCHAR IS NULL OR termination_reason = $termination_reason)
  AND ($status::VARCHAR IS NULL OR (CASE WHEN ok THEN 'ok' ELSE 'error' END) = $status)
  AND ($since::TIMESTAMP IS NULL OR started_at >= $since)
  AND ($until::TIMESTAMP IS NULL OR started_at < $until)
  AND ($tool::VARCHAR IS NULL OR list_contains(tools, $tool))
  AND ($min_tokens::BIGINT IS NULL OR input_tokens + output_tokens >= $min_tokens)
ORDER BY started_at DESC, trace_id
LIMIT $limit OFFSET $offset
