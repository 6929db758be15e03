-- The instrumentation scopes of each run's tool calls in one trace (for the arguments hint).
SELECT run_id, list_sort(list(DISTINCT "ScopeName")) AS scopes
FROM spans
WHERE "TraceId" = $trace_id AND span_type = 'tool' AND run_id IS NOT NULL
GROUP BY run_id
