-- Per run: its share of the growth fit of burn_agents.sql (burn_steps = burn_steps.sql or the table
-- run_steps; the table run_growth holds these rows, kept by the writer). The run's points are
-- x = steps after its first step, y = input tokens above the first step's, in log-log space,
-- centred on the run's own means (one intercept per run); a run counts from 2 points.
-- Runs are keyed by a 64-bit hash of their ids, and the per-run first step and means are grouped
-- and joined back: thousands of tiny window partitions would each be sorted on their own.
WITH steps AS (
    SELECT trace_id, run_id, hash(trace_id, run_id) AS rk, agent, step, input_tokens
    FROM burn_steps
),
firsts AS (
    SELECT rk, min(step) AS first_step, arg_min(input_tokens, step) AS first_input
    FROM steps
    GROUP BY rk
),
points AS (
    SELECT s.trace_id, s.run_id, s.rk, s.agent, ln(s.step - f.first_step) AS lx, ln(s.input_tokens - f.first_input) AS ly
    FROM steps s
    JOIN firsts f ON f.rk = s.rk
    WHERE s.step - f.first_step >= 1 AND s.input_tokens - f.first_input > 0
),
means AS (
    SELECT rk, avg(lx) AS mx, avg(ly) AS my
    FROM points
    GROUP BY rk
),
centred AS (
    SELECT p.trace_id, p.run_id, p.rk, p.agent, p.lx - m.mx AS dx, p.ly - m.my AS dy
    FROM points p
    JOIN means m ON m.rk = p.rk
)
SELECT any_value(trace_id) AS trace_id, any_value(run_id) AS run_id, any_value(agent) AS agent,
       count(*) AS points, sum(dx * dx) AS sxx, sum(dx * dy) AS sxy, sum(dy * dy) AS syy
FROM centred
GROUP BY rk
HAVING count(*) >= 2
