-- ctes: loop_rows=loops_derived
-- ClickHouse variant of ../loops_top_tools.sql.
SELECT tool,
       count() AS loops,
       uniqExact(trace_id, run_id) AS runs,
       sum(wasted_tokens) AS wasted_tokens,
       countIf(kind = 'exact') AS exact,
       countIf(kind = 'oscillation') AS oscillation,
       countIf(kind = 'repeated_error') AS repeated_error,
       countIf(kind = 'semantic') AS semantic
FROM loop_rows
GROUP BY tool
ORDER BY loops DESC, wasted_tokens DESC, tool
LIMIT {limit:UInt64}
