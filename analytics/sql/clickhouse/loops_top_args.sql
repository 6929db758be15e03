-- ctes: loop_rows=loops_derived
-- ClickHouse variant of ../loops_top_args.sql.
SELECT tool, args_hash, count() AS loops, uniqExact(trace_id, run_id) AS runs,
       sum(count) AS calls, sum(wasted_tokens) AS wasted_tokens
FROM loop_rows
WHERE kind = 'exact'
GROUP BY tool, args_hash
ORDER BY loops DESC, calls DESC, tool, args_hash
LIMIT {limit:UInt64}
