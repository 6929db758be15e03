-- How many loops of each kind are in scope, whatever the list's limit (loop_rows = loops_derived.sql).
SELECT kind, count(*) AS loops
FROM loop_rows
WHERE $kind::VARCHAR IS NULL OR kind = $kind
GROUP BY kind
ORDER BY kind
