-- ctes: loop_rows=loops_derived
-- ClickHouse variant of ../loops.sql.
SELECT trace_id, run_id, tool, kind, count, first_step, wasted_tokens
FROM loop_rows
WHERE {kind:Nullable(String)} IS NULL OR kind = {kind:Nullable(String)}
ORDER BY started_at DESC, trace_id, run_id, first_step, kind, tool
LIMIT {limit:UInt64}
