-- ctes: run_spans=run_spans
-- The members of the runs of the traces {traces} (every span of a run but its run span), with
-- what stalls.sql judges per run: own backoff, the end of everything begun before (covered_until)
-- and the run's end. Kept per trace in loopsight_run_members (stalls_derive.sql). An llm span whose
-- parent is an llm span (another instrumentation's chat span inside our model call) is part of
-- that call (nested): it is not judged as a call of its own.
WITH runs AS (
    SELECT * FROM run_spans WHERE trace_id IN {traces:Array(String)}
)
SELECT s.TraceId AS trace_id, r.run_id AS run_id, s.SpanId AS span_id, s.span_type AS span_type, s.Timestamp AS ts,
       s.end_time AS end_time, s.Duration / 1e6 AS duration_ms, r.agent AS agent, r.service AS service, r.started_at AS started_at,
       r.end_time AS run_end,
       arraySum(arrayMap((n, a) -> if(n = 'retry', toFloat64OrZero(a['loopsight.backoff_ms']), 0.),
                         s.`Events.Name`, s.`Events.Attributes`)) AS backoff_ms,
       multiIf(s.span_type = 'tool', s.tool, s.span_type = 'llm', toNullable(s.SpanName), NULL) AS what,
       s.span_type = 'llm' AND (s.TraceId, s.ParentSpanId) IN (
           SELECT TraceId, SpanId FROM typed_spans WHERE span_type = 'llm' AND TraceId IN {traces:Array(String)}) AS nested,
       max(toNullable(s.end_time)) OVER (PARTITION BY s.TraceId, r.run_id ORDER BY s.Timestamp, s.SpanId
                                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_until
FROM typed_spans s
JOIN runs r ON s.TraceId = r.trace_id AND s.run_id = r.run_id
WHERE s.SpanId != s.run_id AND s.TraceId IN {traces:Array(String)}
