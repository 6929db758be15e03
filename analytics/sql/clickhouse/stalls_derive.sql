-- ctes: members=stalls_members
-- The run members of the traces {traces}, for loopsight_run_members (one derivation: its rows
-- share derived_at), plus one marker row (span_id '') per trace.
SELECT trace_id, run_id, span_id, span_type, ts, end_time, duration_ms, agent, service, started_at, run_end, backoff_ms, what,
       covered_until, nested, now64(6) AS derived_at
FROM members
UNION ALL
SELECT arrayJoin({traces:Array(String)}), '', '', '', toDateTime64(0, 6, 'UTC'), toDateTime64(0, 6, 'UTC'), 0., NULL, '',
       toDateTime64(0, 6, 'UTC'), toDateTime64(0, 6, 'UTC'), 0., NULL, NULL, false, now64(6)
