-- Per run: its share of the growth fit of burn_agents.sql (burn_steps = burn_steps.sql or the table
-- run_steps; the table run_growth holds these rows, kept by the writer). The run's points are
-- x = steps after its first step, y = input tokens above the first step's, in log-log space,
-- centred on the run's own means (one intercept per run); a run counts from 2 points.
WITH growth AS (
    -- runs are partitioned by a 64-bit hash of their ids: windows sort integers, not strings
    SELECT trace_id, run_id, hash(trace_id, run_id) AS rk, agent,
           step - first_value(step) OVER r AS x,
           input_tokens - first_value(input_tokens) OVER r AS y
    FROM burn_steps
    WINDOW r AS (PARTITION BY hash(trace_id, run_id) ORDER BY step)
),
points AS (
    SELECT trace_id, run_id, rk, agent, ln(x) AS lx, ln(y) AS ly
    FROM growth
    WHERE x >= 1 AND y > 0
),
centred AS (
    SELECT trace_id, run_id, rk, agent, lx - avg(lx) OVER r AS dx, ly - avg(ly) OVER r AS dy
    FROM points
    WINDOW r AS (PARTITION BY rk)
)
SELECT any_value(trace_id) AS trace_id, any_value(run_id) AS run_id, any_value(agent) AS agent,
       count(*) AS points, sum(dx * dx) AS sxx, sum(dx * dy) AS sxy, sum(dy * dy) AS syy
FROM centred
GROUP BY rk
HAVING count(*) >= 2
