-- ClickHouse variant of ../runs.sql (same columns, same order, same rules). An llm span whose
-- parent is an llm span (another instrumentation's chat span inside our model call) is part of
-- that call, not a call of its own.
WITH picked AS (
    SELECT r.TraceId AS TraceId, r.SpanId AS SpanId, r.run_id AS run_id, r.agent AS agent, r.ServiceName AS ServiceName,
           r.Timestamp AS Timestamp, r.Duration AS Duration, r.StatusCode AS StatusCode, r.termination_reason AS termination_reason
    FROM typed_spans r
    WHERE r.span_type = 'agent' AND r.SpanId = r.run_id
      AND ({trace_id:Nullable(String)} IS NULL OR r.TraceId = {trace_id:Nullable(String)})
      AND if(isNull({run_ids:Nullable(String)}), true,
             has(CAST(ifNull({run_ids:Nullable(String)}, '[]'), 'Array(String)'), r.SpanId))
      AND ({agent:Nullable(String)} IS NULL OR r.agent = {agent:Nullable(String)})
      AND ({service:Nullable(String)} IS NULL OR r.ServiceName = {service:Nullable(String)})
      AND ({termination_reason:Nullable(String)} IS NULL OR r.termination_reason = {termination_reason:Nullable(String)})
      AND ({status:Nullable(String)} IS NULL
           OR if(r.termination_reason = 'completed' AND r.StatusCode != 'Error', 'ok', 'error') = {status:Nullable(String)})
      AND ({since:Nullable(DateTime64(6, 'UTC'))} IS NULL OR r.Timestamp >= {since:Nullable(DateTime64(6, 'UTC'))})
      AND ({until:Nullable(DateTime64(6, 'UTC'))} IS NULL OR r.Timestamp < {until:Nullable(DateTime64(6, 'UTC'))})
      AND ({tool:Nullable(String)} IS NULL OR (r.TraceId, r.SpanId) IN (
            SELECT t.TraceId, t.run_id FROM typed_spans t
            WHERE t.span_type = 'tool' AND t.tool = {tool:Nullable(String)} AND t.run_id IS NOT NULL))
      AND ({min_tokens:Nullable(Int64)} IS NULL OR (r.TraceId, r.SpanId) IN (
            SELECT l.TraceId, l.run_id FROM typed_spans l
            WHERE l.span_type = 'llm' AND l.run_id IS NOT NULL
            GROUP BY l.TraceId, l.run_id
            HAVING sum(ifNull(l.input_tokens, 0) + ifNull(l.output_tokens, 0)) >= {min_tokens:Nullable(Int64)}))
    ORDER BY r.Timestamp DESC, r.TraceId
    LIMIT {limit:UInt64} OFFSET {offset:UInt64}
),
agg AS (
    SELECT s.TraceId AS TraceId, s.run_id AS run_id,
           uniqExactIf(s.step, s.span_type IN ('llm', 'tool')) AS steps,
           countIf(s.span_type = 'llm' AND (s.TraceId, s.ParentSpanId) NOT IN (
               SELECT TraceId, SpanId FROM typed_spans
               WHERE span_type = 'llm' AND (TraceId, run_id) IN (SELECT TraceId, run_id FROM picked))) AS llm_calls,
           countIf(s.span_type = 'tool') AS tool_calls,
           countIf(s.span_type = 'tool' AND s.StatusCode = 'Error') AS tool_errors,
           sumIf(greatest(ifNull(s.attempts, 1) - 1, 0), s.span_type = 'tool') AS retries,
           sumIf(ifNull(s.input_tokens, 0), s.span_type = 'llm') AS input_tokens,
           sumIf(ifNull(s.output_tokens, 0), s.span_type = 'llm') AS output_tokens,
           countIf(s.loop_kind IS NOT NULL) AS loops
    FROM typed_spans s
    WHERE (s.TraceId, s.run_id) IN (SELECT TraceId, run_id FROM picked)
    GROUP BY s.TraceId, s.run_id
)
SELECT p.TraceId AS trace_id,
       p.run_id AS run_id,
       p.agent AS agent,
       p.ServiceName AS service,
       p.Timestamp AS started_at,
       p.Duration / 1e6 AS duration_ms,
       if(p.termination_reason = 'completed' AND p.StatusCode != 'Error', 'ok', 'error') AS status,
       p.termination_reason AS termination_reason,
       ifNull(a.steps, 0) AS steps,
       ifNull(a.llm_calls, 0) AS llm_calls,
       ifNull(a.tool_calls, 0) AS tool_calls,
       ifNull(a.tool_errors, 0) AS tool_errors,
       ifNull(a.retries, 0) AS retries,
       ifNull(a.input_tokens, 0) AS input_tokens,
       ifNull(a.output_tokens, 0) AS output_tokens,
       ifNull(a.loops, 0) AS loops
FROM picked p
LEFT JOIN agg a ON a.TraceId = p.TraceId AND a.run_id = p.run_id
ORDER BY p.Timestamp DESC, p.TraceId
