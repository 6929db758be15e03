-- ctes: run_spans=run_spans
-- ClickHouse variant of ../loops_core.sql: every loop of every run in scope, one row per loop,
-- for the runs of the traces {traces} (the run index keeps these rows per trace in
-- loopsight_run_loops through loops_derive.sql; the questions read them with loops_derived.sql).
-- The semantic test on args_sketch (loopsight.analytics.sketch.near) has its constants written
-- in: 140737488355328 = SIMHASH_MODE (1 << 47), 17592186044415 = SET_MASK (2^44 - 1),
-- 7 = NEAR_BITS_LONG (tests/scale/test_sketch.py checks them against the module).
WITH runs AS (
    SELECT * FROM run_spans WHERE trace_id IN {traces:Array(String)}
),
work AS (
    SELECT cityHash64(s.TraceId, assumeNotNull(s.run_id)) AS rk, s.TraceId AS trace_id, assumeNotNull(s.run_id) AS run_id,
           s.SpanId AS span_id, s.Timestamp AS ts, s.span_type AS span_type, s.step AS step, s.tool AS tool,
           s.args_hash AS args_hash, s.args_sketch AS args_sketch, s.error_type AS error_type, s.loop_kind AS loop_kind,
           s.input_tokens AS input_tokens, s.output_tokens AS output_tokens,
           toInt64(sum(if(s.span_type = 'llm', 1, 0)) OVER (PARTITION BY rk ORDER BY ts, span_id ROWS UNBOUNDED PRECEDING)) - 1 AS llm_seen
    FROM typed_spans s
    WHERE s.span_type IN ('llm', 'tool') AND s.TraceId IN {traces:Array(String)} AND (s.TraceId, s.run_id) IN (SELECT trace_id, run_id FROM runs)
),
calls AS (
    SELECT rk, trace_id, run_id, span_id, ts, tool, args_hash, args_sketch, error_type, loop_kind,
           cityHash64(ifNull(tool, '')) AS tk,
           coalesce(step, greatest(llm_seen, 0)) AS step,
           -- a call without an args hash never equals another call
           cityHash64(ifNull(tool, ''), coalesce(args_hash, concat('#', span_id))) AS call_key,
           toInt64(row_number() OVER (PARTITION BY rk ORDER BY ts, span_id)) AS seq
    FROM work
    WHERE span_type = 'tool'
),
lagged AS (
    SELECT *,
           lagInFrame(toNullable(call_key), 1) OVER r AS k1, lagInFrame(toNullable(call_key), 2) OVER r AS k2,
           lagInFrame(toNullable(call_key), 3) OVER r AS k3, lagInFrame(toNullable(call_key), 4) OVER r AS k4,
           lagInFrame(toNullable(call_key), 5) OVER r AS k5,
           lagInFrame(tool, 1) OVER r AS t1, lagInFrame(tool, 2) OVER r AS t2,
           toInt64(row_number() OVER t) - toInt64(row_number() OVER (PARTITION BY rk, tk, ifNull(error_type, '') ORDER BY seq)) AS error_island,
           lagInFrame(toNullable(ts)) OVER t AS prev_ts, lagInFrame(toNullable(step)) OVER t AS prev_step,
           lagInFrame(args_sketch) OVER t AS prev_sketch, lagInFrame(args_hash) OVER t AS prev_hash,
           lagInFrame(args_sketch, 2) OVER t AS prev2_sketch, lagInFrame(args_hash, 2) OVER t AS prev2_hash,
           toInt64(row_number() OVER t) AS tool_seq
    FROM calls
    WINDOW r AS (PARTITION BY rk ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
           t AS (PARTITION BY rk, tk ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
exact AS (
    SELECT any(trace_id) AS trace_id, any(run_id) AS run_id, any(tool) AS tool, 'exact' AS kind,
           any(args_hash) AS args_hash, toInt64(count()) AS count, toNullable(toInt64(argMin(step, seq))) AS first_step, min(ts) AS first_at
    FROM calls c
    WHERE c.args_hash IS NOT NULL
    GROUP BY rk, call_key
    HAVING count() >= 3
),
osc_hits AS (
    SELECT rk, trace_id, run_id, seq, seq - 3 AS start_seq,
           arraySort([assumeNotNull(call_key), assumeNotNull(k1)]) AS cycle,
           arrayStringConcat(arraySort(arrayDistinct(arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, [tool, t1])))), ',') AS tools
    FROM lagged
    WHERE call_key = k2 AND k1 = k3 AND call_key != k1
    UNION ALL
    SELECT rk, trace_id, run_id, seq, seq - 5,
           arraySort([assumeNotNull(call_key), assumeNotNull(k1), assumeNotNull(k2)]),
           arrayStringConcat(arraySort(arrayDistinct(arrayMap(x -> assumeNotNull(x), arrayFilter(x -> x IS NOT NULL, [tool, t1, t2])))), ',')
    FROM lagged
    WHERE call_key = k3 AND k1 = k4 AND k2 = k5 AND call_key != k1 AND k1 != k2 AND call_key != k2
),
oscillation AS (
    SELECT any(h.trace_id) AS trace_id, any(h.run_id) AS run_id, toNullable(any(h.tools)) AS tool, 'oscillation' AS kind,
           CAST(NULL AS Nullable(String)) AS args_hash,
           toInt64(max(h.seq) - min(h.start_seq) + 1) AS count,
           toNullable(toInt64(argMin(c.step, c.seq))) AS first_step, min(c.ts) AS first_at
    FROM osc_hits h
    JOIN calls c ON c.rk = h.rk AND c.seq = h.start_seq
    GROUP BY h.rk, h.cycle
),
repeated_error AS (
    SELECT any(trace_id) AS trace_id, any(run_id) AS run_id, any(tool) AS tool, 'repeated_error' AS kind,
           CAST(NULL AS Nullable(String)) AS args_hash, toInt64(count()) AS count,
           toNullable(toInt64(argMin(step, seq))) AS first_step, min(ts) AS first_at
    FROM lagged l
    WHERE l.error_type IS NOT NULL
    GROUP BY rk, tk, l.error_type, error_island
    HAVING count() >= 3
),
sketched AS (
    SELECT *,
           sum(if(near_prev, 0, 1)) OVER (PARTITION BY rk, tk ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS chain
    FROM (
        SELECT *,
               -- loopsight.analytics.sketch.near against the previous call of the tool or the one before it
               ifNull(args_sketch != 0 AND prev_sketch != 0 AND args_hash != prev_hash
                      AND bitShiftRight(args_sketch, 47) = bitShiftRight(prev_sketch, 47)
                      AND multiIf(bitAnd(args_sketch, 140737488355328) != 0, bitCount(bitXor(args_sketch, prev_sketch)) <= 7,
                                  bitAnd(bitShiftRight(args_sketch, 44), 7) = bitAnd(bitShiftRight(prev_sketch, 44), 7), args_sketch = prev_sketch,
                                  bitAnd(bitShiftRight(args_sketch, 44), 7) = bitAnd(bitShiftRight(prev_sketch, 44), 7) + 1,
                                  bitAnd(bitAnd(args_sketch, prev_sketch), 17592186044415) = bitAnd(prev_sketch, 17592186044415),
                                  bitAnd(bitShiftRight(args_sketch, 44), 7) + 1 = bitAnd(bitShiftRight(prev_sketch, 44), 7),
                                  bitAnd(bitAnd(args_sketch, prev_sketch), 17592186044415) = bitAnd(args_sketch, 17592186044415),
                                  false), false)
               OR ifNull(args_sketch != 0 AND prev2_sketch != 0 AND args_hash != prev2_hash
                      AND bitShiftRight(args_sketch, 47) = bitShiftRight(prev2_sketch, 47)
                      AND multiIf(bitAnd(args_sketch, 140737488355328) != 0, bitCount(bitXor(args_sketch, prev2_sketch)) <= 7,
                                  bitAnd(bitShiftRight(args_sketch, 44), 7) = bitAnd(bitShiftRight(prev2_sketch, 44), 7), args_sketch = prev2_sketch,
                                  bitAnd(bitShiftRight(args_sketch, 44), 7) = bitAnd(bitShiftRight(prev2_sketch, 44), 7) + 1,
                                  bitAnd(bitAnd(args_sketch, prev2_sketch), 17592186044415) = bitAnd(prev2_sketch, 17592186044415),
                                  bitAnd(bitShiftRight(args_sketch, 44), 7) + 1 = bitAnd(bitShiftRight(prev2_sketch, 44), 7),
                                  bitAnd(bitAnd(args_sketch, prev2_sketch), 17592186044415) = bitAnd(args_sketch, 17592186044415),
                                  false), false) AS near_prev
        FROM lagged
        WHERE args_sketch IS NOT NULL AND (loop_kind IS NULL OR loop_kind != 'semantic')
    )
),
semantic_sketch AS (
    SELECT any(trace_id) AS trace_id, any(run_id) AS run_id, any(tool) AS tool, toInt64(count()) AS count,
           toNullable(toInt64(argMin(step, seq))) AS first_step, min(ts) AS first_at
    FROM sketched
    GROUP BY rk, tk, chain
    HAVING count() >= 3 AND uniqExact(args_hash) >= 3
),
-- The loop guard's record: each flagged call repeats the call of that tool just before it.
semantic_guard AS (
    SELECT any(trace_id) AS trace_id, any(run_id) AS run_id, any(tool) AS tool, toInt64(count() + 1) AS count,
           toNullable(toInt64(coalesce(tupleElement(argMin(tuple(prev_step), seq), 1), min(step)))) AS first_step,
           coalesce(min(prev_ts), min(ts)) AS first_at
    FROM lagged l
    WHERE l.loop_kind = 'semantic'
    GROUP BY rk, tk
),
semantic AS (
    -- A run the guard watched and one with argument sketches can both report a tool: keep one row.
    SELECT trace_id, run_id, tool, 'semantic' AS kind, CAST(NULL AS Nullable(String)) AS args_hash,
           max(count) AS count, min(first_step) AS first_step, min(first_at) AS first_at
    FROM (SELECT * FROM semantic_guard UNION ALL SELECT * FROM semantic_sketch)
    GROUP BY trace_id, run_id, tool
),
found AS (
    SELECT * FROM exact
    UNION ALL SELECT * FROM oscillation
    UNION ALL SELECT * FROM repeated_error
    UNION ALL SELECT * FROM semantic
)
SELECT f.trace_id AS trace_id, f.run_id AS run_id, r.agent AS agent, r.service AS service, r.started_at AS started_at, f.tool AS tool, f.kind AS kind,
       f.args_hash AS args_hash, f.count AS count, f.first_step AS first_step, f.first_at AS first_at,
       toInt64(sumIf(ifNull(w.input_tokens, 0) + ifNull(w.output_tokens, 0), w.ts > f.first_at)) AS wasted_tokens
FROM found f
JOIN runs r ON r.trace_id = f.trace_id AND r.run_id = f.run_id
LEFT JOIN (SELECT rk, ts, input_tokens, output_tokens FROM work WHERE span_type = 'llm') w
       ON w.rk = cityHash64(f.trace_id, f.run_id)
GROUP BY f.trace_id, f.run_id, r.agent, r.service, r.started_at, f.tool, f.kind, f.args_hash, f.count, f.first_step, f.first_at
