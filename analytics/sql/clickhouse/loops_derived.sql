-- The loop rows (columns of loops_core.sql) of the runs in scope, from loopsight_run_loops:
-- each trace's newest derivation only.
SELECT trace_id, run_id, agent, started_at, tool, kind, args_hash, count, first_step, first_at, wasted_tokens
FROM loopsight_run_loops
WHERE kind != ''
  -- hashed ids: the IN set of (String, time) pairs cost 3x more at 100k spans
  AND (cityHash64(trace_id), derived_at) IN (SELECT cityHash64(trace_id), max(derived_at) FROM loopsight_run_loops GROUP BY trace_id)
  AND ({agent:Nullable(String)} IS NULL OR agent = {agent:Nullable(String)})
  AND ({service:Nullable(String)} IS NULL OR service = {service:Nullable(String)})
  AND ({since:Nullable(DateTime64(6, 'UTC'))} IS NULL OR started_at >= {since:Nullable(DateTime64(6, 'UTC'))})
  AND ({until:Nullable(DateTime64(6, 'UTC'))} IS NULL OR started_at < {until:Nullable(DateTime64(6, 'UTC'))})
