-- ctes: burn_steps=burn_steps
-- The input tokens per step of the runs of the traces {traces}, for loopsight_run_steps (one
-- derivation: its rows share derived_at), plus one marker row (step -1) per trace.
SELECT trace_id, run_id, agent, service, started_at, step, input_tokens, now64(6) AS derived_at
FROM burn_steps
UNION ALL
SELECT arrayJoin({traces:Array(String)}), '', NULL, '', toDateTime64(0, 6, 'UTC'), -1, NULL, now64(6)
