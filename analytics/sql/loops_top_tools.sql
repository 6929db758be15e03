-- The tools that loop most (loop_rows = loops_derived.sql); an oscillation counts for its tool list.
SELECT tool,
       count(*) AS loops,
       count(DISTINCT (trace_id, run_id)) AS runs,
       sum(wasted_tokens) AS wasted_tokens,
       count(*) FILTER (WHERE kind = 'exact') AS exact,
       count(*) FILTER (WHERE kind = 'oscillation') AS oscillation,
       count(*) FILTER (WHERE kind = 'repeated_error') AS repeated_error,
       count(*) FILTER (WHERE kind = 'semantic') AS semantic,
       count(*) FILTER (WHERE kind = 'no_progress') AS no_progress
FROM loop_rows
GROUP BY tool
ORDER BY loops DESC, wasted_tokens DESC, tool
LIMIT $limit
