-- ctes: found=stalls_found
-- How many stalls of each kind are in scope, whatever the list's limit.
SELECT kind, count(*) AS stalls
FROM found
WHERE $kind::VARCHAR IS NULL OR kind = $kind
GROUP BY kind
ORDER BY kind
