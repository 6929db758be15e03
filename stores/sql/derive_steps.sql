-- The input tokens per step of the runs in the writer's derivation scope (burn_steps.sql over
-- derive_scope, analytics/derive.py), read by burn_growth.sql as the CTE burn_steps.
SELECT * FROM derive_steps
