-- ctes: filtered=runs_filtered
-- How many runs the runs list's filters keep, whatever its page.
SELECT count(*) AS runs FROM filtered
