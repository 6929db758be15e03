-- ctes: run_spans=run_spans
-- ClickHouse variant of ../loop_runs.sql (since and until are always given).
SELECT count() AS runs
FROM run_spans r
WHERE (r.trace_id, r.run_id) IN (SELECT s.TraceId, s.run_id FROM typed_spans s WHERE s.loop_kind IS NOT NULL AND s.run_id IS NOT NULL)
