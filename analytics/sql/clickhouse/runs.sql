-- ctes: runs=run_spans
-- ClickHouse variant of ../runs.sql (same columns, same order, same rules). An llm span whose
-- parent is an llm span (another instrumentation's chat span inside our model call) is part of
-- that call, not a call of its own.
WITH picked AS (
    SELECT r.trace_id AS trace_id, r.run_id AS run_id, r.agent AS agent, r.service AS service, r.started_at AS started_at,
           r.duration AS duration, r.status_code AS status_code, r.termination_reason AS termination_reason
    FROM runs r
    WHERE ({trace_id:Nullable(String)} IS NULL OR r.trace_id = {trace_id:Nullable(String)})
      AND if(isNull({run_ids:Nullable(String)}), true,
             has(CAST(ifNull({run_ids:Nullable(String)}, '[]'), 'Array(String)'), r.run_id))
      AND ({termination_reason:Nullable(String)} IS NULL OR r.termination_reason = {termination_reason:Nullable(String)})
      AND ({status:Nullable(String)} IS NULL
           OR if(r.termination_reason = 'completed' AND r.status_code != 'Error', 'ok', 'error') = {status:Nullable(String)})
      AND ({tool:Nullable(String)} IS NULL OR (r.trace_id, r.run_id) IN (
            SELECT t.TraceId, t.run_id FROM typed_spans t
            WHERE t.span_type = 'tool' AND t.tool = {tool:Nullable(String)} AND t.run_id IS NOT NULL))
      AND ({min_tokens:Nullable(Int64)} IS NULL OR (r.trace_id, r.run_id) IN (
            SELECT l.TraceId, l.run_id FROM typed_spans l
            WHERE l.span_type = 'llm' AND l.run_id IS NOT NULL
            GROUP BY l.TraceId, l.run_id
            HAVING sum(ifNull(l.input_tokens, 0) + ifNull(l.output_tokens, 0)) >= {min_tokens:Nullable(Int64)}))
    ORDER BY r.started_at DESC, r.trace_id
    LIMIT {limit:UInt64} OFFSET {offset:UInt64}
),
agg AS (
    SELECT s.TraceId AS TraceId, s.run_id AS run_id,
           uniqExactIf(s.step, s.span_type IN ('llm', 'tool')) AS steps,
           countIf(s.span_type = 'llm' AND (s.TraceId, s.ParentSpanId) NOT IN (
               SELECT TraceId, SpanId FROM typed_spans
               WHERE span_type = 'llm' AND (TraceId, run_id) IN (SELECT trace_id, run_id FROM picked))) AS llm_calls,
           countIf(s.span_type = 'tool') AS tool_calls,
           countIf(s.span_type = 'tool' AND s.StatusCode = 'Error') AS tool_errors,
           sumIf(greatest(ifNull(s.attempts, 1) - 1, 0), s.span_type = 'tool') AS retries,
           sumIf(ifNull(s.input_tokens, 0), s.span_type = 'llm') AS input_tokens,
           sumIf(ifNull(s.output_tokens, 0), s.span_type = 'llm') AS output_tokens
    FROM typed_spans s
    WHERE (s.TraceId, s.run_id) IN (SELECT trace_id, run_id FROM picked)
    GROUP BY s.TraceId, s.run_id
),
loop_counts AS (  -- each trace's newest derivation, as loops_derived.sql reads it
    SELECT trace_id, run_id, count() AS loops
    FROM loopsight_run_loops
    WHERE kind != '' AND trace_id IN (SELECT trace_id FROM picked)
      AND (cityHash64(trace_id), derived_at) IN (
            SELECT cityHash64(trace_id), max(derived_at) FROM loopsight_run_loops
            WHERE trace_id IN (SELECT trace_id FROM picked) GROUP BY trace_id)
    GROUP BY trace_id, run_id
)
SELECT p.trace_id AS trace_id,
       p.run_id AS run_id,
       p.agent AS agent,
       p.service AS service,
       p.started_at AS started_at,
       p.duration / 1e6 AS duration_ms,
       if(p.termination_reason = 'completed' AND p.status_code != 'Error', 'ok', 'error') AS status,
       p.termination_reason AS termination_reason,
       ifNull(a.steps, 0) AS steps,
       ifNull(a.llm_calls, 0) AS llm_calls,
       ifNull(a.tool_calls, 0) AS tool_calls,
       ifNull(a.tool_errors, 0) AS tool_errors,
       ifNull(a.retries, 0) AS retries,
       ifNull(a.input_tokens, 0) AS input_tokens,
       ifNull(a.output_tokens, 0) AS output_tokens,
       ifNull(lc.loops, 0) AS loops
FROM picked p
LEFT JOIN agg a ON a.TraceId = p.trace_id AND a.run_id = p.run_id
LEFT JOIN loop_counts lc ON lc.trace_id = p.trace_id AND lc.run_id = p.run_id
ORDER BY p.started_at DESC, p.trace_id
