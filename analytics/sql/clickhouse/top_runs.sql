-- ctes: runs=run_spans
-- ClickHouse variant of ../top_runs.sql.
SELECT l.TraceId AS trace_id,
       l.run_id AS run_id,
       sum(ifNull(l.input_tokens, 0) + ifNull(l.output_tokens, 0)) AS tokens
FROM typed_spans l
WHERE l.span_type = 'llm' AND (l.TraceId, l.run_id) IN (SELECT trace_id, run_id FROM runs)
GROUP BY l.TraceId, l.run_id
HAVING tokens > 0
ORDER BY tokens DESC, trace_id
LIMIT {limit:UInt64}
