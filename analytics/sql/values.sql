-- The values one field takes over the runs of the window (agent, service or tool), with how many
-- runs have each, most runs first: what a picker lists without fetching the runs.
WITH scoped AS (
    SELECT agent, service, tools
    FROM run_facts
    WHERE ($since::TIMESTAMP IS NULL OR started_at >= $since)
      AND ($until::TIMESTAMP IS NULL OR started_at < $until)
      AND ($agent::VARCHAR IS NULL OR agent = $agent)
      AND ($service::VARCHAR IS NULL OR service = $service)
),
counted AS (
    SELECT 'agent' AS field, agent AS value, count(*) AS runs FROM scoped GROUP BY agent
    UNION ALL
    SELECT 'service' AS field, service AS value, count(*) AS runs FROM scoped GROUP BY service
    UNION ALL
    SELECT 'tool' AS field, tool AS value, count(*) AS runs
    FROM (SELECT unnest(tools) AS tool FROM scoped)
    GROUP BY tool
)
SELECT value, runs
FROM counted
WHERE field = $field AND value IS NOT NULL AND value <> ''
ORDER BY runs DESC, value
LIMIT $limit
