-- The tools that loop most (loop_rows = loops_derived.sql); an oscillation counts for its tool list.
-- A run's wasted tokens count once per tool (its loops of that tool overlap: loops_waste.sql).
WITH per_run AS (
    SELECT tool, trace_id, run_id, count(*) AS loops, max(wasted_tokens) AS wasted_tokens,
           count(*) FILTER (WHERE kind = 'exact') AS exact,
           count(*) FILTER (WHERE kind = 'oscillation') AS oscillation,
           count(*) FILTER (WHERE kind = 'repeated_error') AS repeated_error,
           count(*) FILTER (WHERE kind = 'semantic') AS semantic,
           count(*) FILTER (WHERE kind = 'no_progress') AS no_progress
    FROM loop_rows
    GROUP BY tool, trace_id, run_id
)
SELECT tool, sum(loops) AS loops, count(*) AS runs, sum(wasted_tokens) AS wasted_tokens, sum(exact) AS exact,
       sum(oscillation) AS oscillation, sum(repeated_error) AS repeated_error, sum(semantic) AS semantic,
       sum(no_progress) AS no_progress
FROM per_run
GROUP BY tool
ORDER BY loops DESC, wasted_tokens DESC, tool
LIMIT $limit
