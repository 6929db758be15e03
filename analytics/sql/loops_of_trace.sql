-- ctes: trace_loop_rows=loops_derived
-- The detected loops of one trace's runs ($trace_id): their own and those across their session's runs
-- reported on them, as the CTE loop_rows of the loop questions when a trace is asked for (its Run page).
SELECT * FROM trace_loop_rows WHERE trace_id = $trace_id
