-- ctes: loop_rows=loops_core
-- The loop rows of the runs of the traces {traces}, for loopsight_run_loops (one derivation:
-- its rows share derived_at), plus one marker row (kind '') per trace so a trace whose loops
-- are gone reads as having none. Inserted by loopsight.stores.clickhouse_run_index.index_traces.
SELECT trace_id, run_id, agent, service, started_at, tool, kind, args_hash, count, first_step, first_at, wasted_tokens,
       now64(6) AS derived_at
FROM loop_rows
UNION ALL
SELECT arrayJoin({traces:Array(String)}), '', NULL, '', toDateTime64(0, 6, 'UTC'), NULL, '', NULL, 0, NULL,
       toDateTime64(0, 6, 'UTC'), 0, now64(6)
