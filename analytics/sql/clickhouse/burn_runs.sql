-- ctes: loop_rows=loops_derived, runs=run_spans
-- ClickHouse variant of ../burn_runs.sql.
WITH totals AS (
    SELECT r.trace_id AS trace_id, r.run_id AS run_id, r.agent AS agent, r.started_at AS started_at,
           toInt64(ifNull(sum(s.input_tokens), 0)) AS input_tokens, toInt64(ifNull(sum(s.output_tokens), 0)) AS output_tokens
    FROM runs r
    LEFT JOIN (SELECT TraceId, run_id, input_tokens, output_tokens FROM typed_spans WHERE span_type = 'llm') s
           ON s.TraceId = r.trace_id AND s.run_id = r.run_id
    GROUP BY r.trace_id, r.run_id, r.agent, r.started_at
),
wasted AS (
    -- the earliest loop of a run wastes the most: everything after it began
    SELECT trace_id, run_id, max(wasted_tokens) AS wasted_tokens FROM loop_rows GROUP BY trace_id, run_id
)
SELECT t.trace_id AS trace_id, t.run_id AS run_id, t.agent AS agent, t.input_tokens AS input_tokens,
       t.output_tokens AS output_tokens, ifNull(w.wasted_tokens, 0) AS wasted_tokens
FROM totals t
LEFT JOIN wasted w ON w.trace_id = t.trace_id AND w.run_id = t.run_id
ORDER BY t.input_tokens + t.output_tokens DESC, t.started_at DESC, t.trace_id
LIMIT {limit:UInt64}
SETTINGS join_use_nulls = 1
