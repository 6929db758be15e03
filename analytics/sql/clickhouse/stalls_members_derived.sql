-- The run members (columns of stalls_members.sql) of the runs in scope, from
-- loopsight_run_members: each trace's newest derivation only.
SELECT trace_id, run_id, span_id, span_type, ts, end_time, duration_ms, agent, started_at, run_end, backoff_ms, what, covered_until, nested
FROM loopsight_run_members
WHERE span_id != ''
  -- hashed ids: the IN set of (String, time) pairs cost 3x more at 100k spans
  AND (cityHash64(trace_id), derived_at) IN (SELECT cityHash64(trace_id), max(derived_at) FROM loopsight_run_members GROUP BY trace_id)
  AND ({agent:Nullable(String)} IS NULL OR agent = {agent:Nullable(String)})
  AND ({service:Nullable(String)} IS NULL OR service = {service:Nullable(String)})
  AND ({since:Nullable(DateTime64(6, 'UTC'))} IS NULL OR started_at >= {since:Nullable(DateTime64(6, 'UTC'))})
  AND ({until:Nullable(DateTime64(6, 'UTC'))} IS NULL OR started_at < {until:Nullable(DateTime64(6, 'UTC'))})
