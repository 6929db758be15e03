-- The runs that looped, with their loop kinds (loop_rows = loops_derived.sql).
SELECT trace_id, run_id, list_sort(list_distinct(list(kind))) AS kinds
FROM loop_rows
GROUP BY trace_id, run_id
ORDER BY trace_id, run_id
