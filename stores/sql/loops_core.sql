-- ctes: runs=run_spans
-- Every loop of every run in scope (the definitions are docs/detection.md), one row per loop,
-- with the extra columns the other loop questions need (agent, service, started_at, args_hash, first_at).
-- Parameters: since, until, agent, service (run filters); near_bits_long, simhash_mode, set_mask
-- (the semantic test of loopsight.analytics.sketch.near, on the stored args_sketch).
WITH work AS MATERIALIZED (
    -- 64-bit hashes of the run / tool / call keys: windows and groups sort integers, not strings
    SELECT hash(s."TraceId", s.run_id) AS rk, s."TraceId" AS trace_id, s.run_id, s."SpanId" AS span_id, s."Timestamp" AS ts, s.span_type,
           s.step, s.tool, s.args_hash, s.args_sketch, s.error_type, s.loop_kind,
           s.input_tokens, s.output_tokens
    FROM spans s
    SEMI JOIN runs r ON s."TraceId" = r.trace_id AND s.run_id = r.run_id
    WHERE s.span_type IN ('llm', 'tool')
),
unnumbered AS (
    -- producers that give no step: the step is the number of model calls begun before (only
    -- the runs with such calls are numbered)
    SELECT rk, span_id, ts,
           sum(CASE WHEN span_type = 'llm' THEN 1 ELSE 0 END)
               OVER (PARTITION BY rk ORDER BY ts, span_id ROWS UNBOUNDED PRECEDING) - 1 AS llm_seen
    FROM work
    WHERE rk IN (SELECT rk FROM work WHERE span_type = 'tool' AND step IS NULL)
),
-- The windows below run over one ordering of all runs (a window partitioned by run sorts each
-- of thousands of tiny partitions on its own, about twice as slow): seq numbers the calls run
-- after run, and a lag (or lead) counts only when the row it reads has the same run (and tool) key.
calls AS MATERIALIZED (
    SELECT *,
           row_number() OVER r AS seq,
           CASE WHEN lag(rk, 1) OVER r = rk THEN lag(call_key, 1) OVER r END AS k1,
           CASE WHEN lag(rk, 2) OVER r = rk THEN lag(call_key, 2) OVER r END AS k2,
           CASE WHEN lag(rk, 3) OVER r = rk THEN lag(call_key, 3) OVER r END AS k3,
           CASE WHEN lag(rk, 4) OVER r = rk THEN lag(call_key, 4) OVER r END AS k4,
           CASE WHEN lag(rk, 5) OVER r = rk THEN lag(call_key, 5) OVER r END AS k5,
           CASE WHEN lag(rk, 1) OVER r = rk THEN lag(tool, 1) OVER r END AS t1,
           CASE WHEN lag(rk, 2) OVER r = rk THEN lag(tool, 2) OVER r END AS t2
    FROM (
        SELECT w.rk, trace_id, run_id, w.span_id, w.ts, tool, args_hash, args_sketch, error_type, loop_kind,
               hash(tool) AS tk,
               coalesce(w.step, greatest(u.llm_seen, 0)) AS step,
               -- a call without an args hash never equals another call
               hash(tool, coalesce(args_hash, '#' || w.span_id)) AS call_key
        FROM work w
        LEFT JOIN unnumbered u ON u.rk = w.rk AND u.span_id = w.span_id AND u.ts = w.ts
        WHERE w.span_type = 'tool'
    )
    WINDOW r AS (ORDER BY rk, ts, span_id)
),
lagged AS MATERIALIZED (
    SELECT *,
           row_number() OVER t AS tool_seq,
           -- where a tool's unbroken run of one error type begins and ends
           error_type IS NOT NULL AND (lag(rk) OVER t IS DISTINCT FROM rk OR lag(tk) OVER t IS DISTINCT FROM tk
                                       OR lag(error_type) OVER t IS DISTINCT FROM error_type) AS error_begins,
           error_type IS NOT NULL AND (lead(rk) OVER t IS DISTINCT FROM rk OR lead(tk) OVER t IS DISTINCT FROM tk
                                       OR lead(error_type) OVER t IS DISTINCT FROM error_type) AS error_ends,
           CASE WHEN lag(rk) OVER t = rk AND lag(tk) OVER t = tk THEN lag(args_sketch) OVER t END AS prev_sketch,
           CASE WHEN lag(rk) OVER t = rk AND lag(tk) OVER t = tk THEN lag(args_hash) OVER t END AS prev_hash,
           CASE WHEN lag(rk, 2) OVER t = rk AND lag(tk, 2) OVER t = tk THEN lag(args_sketch, 2) OVER t END AS prev2_sketch,
           CASE WHEN lag(rk, 2) OVER t = rk AND lag(tk, 2) OVER t = tk THEN lag(args_hash, 2) OVER t END AS prev2_hash,
           CASE WHEN lag(rk) OVER t = rk AND lag(tk) OVER t = tk THEN lag(ts) OVER t END AS prev_ts,
           CASE WHEN lag(rk) OVER t = rk AND lag(tk) OVER t = tk THEN lag(step) OVER t END AS prev_step
    FROM calls
    WINDOW t AS (ORDER BY rk, tk, seq)
),
exact AS (
    -- counted on integers first; the loop's first call (least seq, also earliest) gives the rest
    SELECT c.trace_id, c.run_id, c.tool, 'exact' AS kind, c.args_hash, g.count, c.step AS first_step, c.ts AS first_at
    FROM (
        SELECT min(seq) AS seq, count(*) AS count
        FROM calls
        WHERE args_hash IS NOT NULL
        GROUP BY rk, call_key
        HAVING count(*) >= 3
    ) g
    JOIN calls c ON c.seq = g.seq
),
osc_hits AS (
    SELECT rk, trace_id, run_id, seq, seq - 3 AS start_seq,
           list_sort([call_key, k1]) AS cycle,
           array_to_string(list_sort(list_distinct([tool, t1])), ',') AS tools
    FROM lagged
    WHERE call_key = k2 AND k1 = k3 AND call_key <> k1
    UNION ALL
    SELECT rk, trace_id, run_id, seq, seq - 5,
           list_sort([call_key, k1, k2]),
           array_to_string(list_sort(list_distinct([tool, t1, t2])), ',')
    FROM lagged
    WHERE call_key = k3 AND k1 = k4 AND k2 = k5 AND call_key <> k1 AND k1 <> k2 AND call_key <> k2
),
oscillation AS (
    SELECT any_value(h.trace_id) AS trace_id, any_value(h.run_id) AS run_id, any_value(h.tools) AS tool, 'oscillation' AS kind, NULL::VARCHAR AS args_hash,
           max(h.seq) - min(h.start_seq) + 1 AS count,
           arg_min(c.step, c.seq) AS first_step, min(c.ts) AS first_at
    FROM osc_hits h
    JOIN calls c ON c.rk = h.rk AND c.seq = h.start_seq
    GROUP BY h.rk, h.cycle
),
repeated_error AS (
    -- an error run's first and last calls: the run's count, first step and start
    SELECT trace_id, run_id, tool, 'repeated_error' AS kind, NULL::VARCHAR AS args_hash, count, first_step, first_at
    FROM (
        SELECT trace_id, run_id, tool, error_ends,
               CASE WHEN error_begins THEN 1 ELSE tool_seq - lag(tool_seq) OVER e + 1 END AS count,
               CASE WHEN error_begins THEN step ELSE lag(step) OVER e END AS first_step,
               CASE WHEN error_begins THEN ts ELSE lag(ts) OVER e END AS first_at
        FROM lagged
        WHERE error_begins OR error_ends
        WINDOW e AS (ORDER BY tool_seq)
    )
    WHERE error_ends AND count >= 3
),
sketched AS (
    SELECT *,
           sum(CASE WHEN near_prev THEN 0 ELSE 1 END) OVER t AS chain
    FROM (
        SELECT *,
               -- loopsight.analytics.sketch.near against the previous call of the tool or the one before it
               coalesce(args_sketch <> 0 AND prev_sketch <> 0 AND args_hash <> prev_hash AND args_sketch >> 47 = prev_sketch >> 47
                        AND CASE WHEN args_sketch & $simhash_mode::UBIGINT <> 0
                                 THEN bit_count(xor(args_sketch, prev_sketch)) <= $near_bits_long
                                 WHEN (args_sketch >> 44) & 7 = (prev_sketch >> 44) & 7 THEN args_sketch = prev_sketch
                                 WHEN (args_sketch >> 44) & 7 = ((prev_sketch >> 44) & 7) + 1
                                 THEN (args_sketch & prev_sketch & $set_mask::UBIGINT) = (prev_sketch & $set_mask::UBIGINT)
                                 WHEN ((args_sketch >> 44) & 7) + 1 = (prev_sketch >> 44) & 7
                                 THEN (args_sketch & prev_sketch & $set_mask::UBIGINT) = (args_sketch & $set_mask::UBIGINT)
                                 ELSE false END, false)
               OR coalesce(args_sketch <> 0 AND prev2_sketch <> 0 AND args_hash <> prev2_hash AND args_sketch >> 47 = prev2_sketch >> 47
                        AND CASE WHEN args_sketch & $simhash_mode::UBIGINT <> 0
                                 THEN bit_count(xor(args_sketch, prev2_sketch)) <= $near_bits_long
                                 WHEN (args_sketch >> 44) & 7 = (prev2_sketch >> 44) & 7 THEN args_sketch = prev2_sketch
                                 WHEN (args_sketch >> 44) & 7 = ((prev2_sketch >> 44) & 7) + 1
                                 THEN (args_sketch & prev2_sketch & $set_mask::UBIGINT) = (prev2_sketch & $set_mask::UBIGINT)
                                 WHEN ((args_sketch >> 44) & 7) + 1 = (prev2_sketch >> 44) & 7
                                 THEN (args_sketch & prev2_sketch & $set_mask::UBIGINT) = (args_sketch & $set_mask::UBIGINT)
                                 ELSE false END, false) AS near_prev
        FROM lagged
        WHERE args_sketch IS NOT NULL AND loop_kind IS DISTINCT FROM 'semantic'
    )
    WINDOW t AS (ORDER BY rk, tk, seq ROWS UNBOUNDED PRECEDING)
),
semantic_sketch AS (
    SELECT any_value(trace_id) AS trace_id, any_value(run_id) AS run_id, any_value(tool) AS tool, 'semantic' AS kind,
           NULL::VARCHAR AS args_hash, count(*) AS count, arg_min(step, seq) AS first_step, min(ts) AS first_at
    FROM sketched
    GROUP BY rk, tk, chain
    HAVING count(*) >= 3 AND count(DISTINCT args_hash) >= 3
),
-- The loop guard's record: each flagged call repeats the call of that tool just before it.
semantic_guard AS (
    SELECT any_value(trace_id) AS trace_id, any_value(run_id) AS run_id, any_value(tool) AS tool, 'semantic' AS kind,
           NULL::VARCHAR AS args_hash, count(*) + 1 AS count,
           coalesce(arg_min(prev_step, seq), min(step)) AS first_step, coalesce(min(prev_ts), min(ts)) AS first_at
    FROM lagged
    WHERE loop_kind = 'semantic'
    GROUP BY rk, tk
),
semantic AS (
    -- A run the guard watched and one with argument sketches can both report a tool: keep one row.
    SELECT trace_id, run_id, tool, 'semantic' AS kind, NULL::VARCHAR AS args_hash, max(count) AS count,
           min(first_step) AS first_step, min(first_at) AS first_at
    FROM (SELECT * FROM semantic_guard UNION ALL SELECT * FROM semantic_sketch)
    GROUP BY trace_id, run_id, tool
),
found AS (
    SELECT *, row_number() OVER () AS loop_id
    FROM (
        SELECT * FROM exact
        UNION ALL SELECT * FROM oscillation
        UNION ALL SELECT * FROM repeated_error
        UNION ALL SELECT * FROM semantic
    )
),
wasted AS (
    SELECT f.loop_id, coalesce(sum(coalesce(w.input_tokens, 0) + coalesce(w.output_tokens, 0)), 0) AS wasted_tokens
    FROM found f
    LEFT JOIN work w ON w.rk = hash(f.trace_id, f.run_id) AND w.span_type = 'llm' AND w.ts > f.first_at
    GROUP BY f.loop_id
)
SELECT f.trace_id, f.run_id, r.agent, r.service, r.started_at, f.tool, f.kind, f.args_hash, f.count, f.first_step,
       f.first_at, w.wasted_tokens
FROM found f
JOIN runs r ON r.trace_id = f.trace_id AND r.run_id = f.run_id
JOIN wasted w ON w.loop_id = f.loop_id
