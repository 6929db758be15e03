-- ctes: burn_steps=burn_steps_derived, runs=run_spans
-- ClickHouse variant of ../burn_agents.sql (same fit, same rule).
WITH growth AS (
    SELECT trace_id, run_id, agent,
           step - first_value(step) OVER r AS x,
           input_tokens - first_value(input_tokens) OVER r AS y
    FROM burn_steps
    WINDOW r AS (PARTITION BY trace_id, run_id ORDER BY step ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
points AS (
    SELECT trace_id, run_id, agent, log(x) AS lx, log(y) AS ly
    FROM growth
    WHERE x >= 1 AND y > 0
),
centred AS (
    SELECT agent, trace_id, run_id,
           lx - avg(lx) OVER r AS dx, ly - avg(ly) OVER r AS dy, count() OVER r AS n_run
    FROM points
    WINDOW r AS (PARTITION BY trace_id, run_id)
),
fit AS (
    SELECT agent, sum(dx * dy) / nullIf(sum(dx * dx), 0) AS k, sum(dx * dx) AS sxx,
           toInt64(count()) AS n, toInt64(uniqExact(trace_id, run_id)) AS fit_runs
    FROM centred
    WHERE n_run >= 2
    GROUP BY agent
),
fit_se AS (
    SELECT f.agent AS agent, f.k AS k, f.n AS n, f.fit_runs AS fit_runs,
           sqrt(sum(pow(c.dy - f.k * c.dx, 2)) / greatest(f.n - f.fit_runs - 1, 1) / f.sxx) AS se
    FROM fit f JOIN (SELECT * FROM centred WHERE n_run >= 2) c ON c.agent = f.agent
    WHERE f.k IS NOT NULL
    GROUP BY f.agent, f.k, f.n, f.fit_runs, f.sxx
),
tokens AS (
    SELECT r.agent AS agent, r.termination_reason = 'completed' AND r.status_code != 'Error' AS ok,
           toInt64(ifNull(sum(ifNull(s.input_tokens, 0) + ifNull(s.output_tokens, 0)), 0)) AS tokens
    FROM runs r
    LEFT JOIN (SELECT TraceId, run_id, input_tokens, output_tokens FROM typed_spans WHERE span_type = 'llm') s
           ON s.TraceId = r.trace_id AND s.run_id = r.run_id
    GROUP BY r.trace_id, r.run_id, r.agent, ok
),
totals AS (
    SELECT agent, count() AS runs,
           sumIf(tokens, ok = 1) / nullIf(countIf(ok = 1), 0) AS tokens_per_success,
           sumIf(tokens, ok = 0) AS tokens_on_failures
    FROM tokens
    GROUP BY agent
)
SELECT t.agent AS agent, t.runs AS runs,
       round(f.k, 4) AS growth_exponent,
       CAST(ifNull(f.k >= {superlinear_k:Float64} AND f.k - 2 * f.se > 1 AND f.fit_runs >= {min_runs:Int64} AND f.n >= {min_points:Int64}, false) AS Bool) AS superlinear,
       round(t.tokens_per_success, 1) AS tokens_per_success,
       t.tokens_on_failures AS tokens_on_failures,
       round(f.se, 4) AS growth_exponent_se,
       ifNull(f.n, 0) AS fit_points
FROM totals t
LEFT JOIN fit_se f ON f.agent = t.agent
ORDER BY t.agent
SETTINGS join_use_nulls = 1
