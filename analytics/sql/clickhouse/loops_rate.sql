-- ctes: loop_rows=loops_derived, run_spans=run_spans
-- ClickHouse variant of ../loops_rate.sql.
SELECT (SELECT count() FROM run_spans) AS runs,
       (SELECT uniqExact(trace_id, run_id) FROM loop_rows) AS looping_runs
