-- The spans in the writer's derivation scope (analytics/derive.py), read by a derivation as the CTE spans.
SELECT * FROM derive_scope
