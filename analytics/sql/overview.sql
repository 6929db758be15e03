-- KPI tiles for the current window [$since, $until) and the previous one [$previous_since, $since),
-- over the runs that started in each (run_facts: one row per run). Status rule as in runs.sql.
SELECT started_at >= $since::TIMESTAMP AS current,
       count(*) AS runs,
       count(*) FILTER (WHERE ok) AS ok_runs,
       coalesce(sum(input_tokens + output_tokens) FILTER (WHERE ok), 0) AS ok_tokens,
       coalesce(sum(tool_calls), 0) AS tool_calls,
       coalesce(sum(tool_errors), 0) AS tool_errors,
       count(*) FILTER (WHERE marked_calls > 0) AS looped_runs,
       round(quantile_cont(duration, 0.95) / 1e6, 3) AS p95_duration_ms
FROM run_facts
WHERE started_at >= $previous_since::TIMESTAMP AND started_at < $until::TIMESTAMP
  AND ($agent::VARCHAR IS NULL OR agent = $agent)
  AND ($service::VARCHAR IS NULL OR service = $service)
GROUP BY current
