-- ctes: loop_rows=loops_derived
-- ClickHouse variant of ../loops_run_ids.sql.
SELECT trace_id, run_id, arraySort(groupUniqArray(kind)) AS kinds
FROM loop_rows
GROUP BY trace_id, run_id
ORDER BY trace_id, run_id
