-- ClickHouse variant of ../tool_stats.sql.
WITH calls AS (
    SELECT t.tool AS tool,
           coalesce(r.agent, t.agent) AS run_agent,
           t.StatusCode = 'Error' AS failed,
           t.error_class AS error_class,
           greatest(ifNull(t.attempts, 1) - 1, 0) AS retries,
           t.Duration AS Duration
    FROM typed_spans t
    LEFT JOIN (SELECT TraceId, SpanId, agent FROM typed_spans WHERE span_type = 'agent') r
           ON r.TraceId = t.TraceId AND r.SpanId = t.run_id
    WHERE t.span_type = 'tool'
      AND ({since:Nullable(DateTime64(6, 'UTC'))} IS NULL OR t.Timestamp >= {since:Nullable(DateTime64(6, 'UTC'))})
      AND ({until:Nullable(DateTime64(6, 'UTC'))} IS NULL OR t.Timestamp < {until:Nullable(DateTime64(6, 'UTC'))})
      AND ({service:Nullable(String)} IS NULL OR t.ServiceName = {service:Nullable(String)})
      AND ({agent:Nullable(String)} IS NULL OR coalesce(r.agent, t.agent) = {agent:Nullable(String)})
      AND ({tool:Nullable(String)} IS NULL OR t.tool = {tool:Nullable(String)})
)
SELECT tool,
       if({by_agent:Bool}, run_agent, NULL) AS agent,
       count() AS calls,
       countIf(failed) AS errors,
       countIf(failed) / count() AS fail_rate,
       CAST(sumMapIf(map(ifNull(error_class, 'unclassified'), toUInt64(1)), failed), 'Map(String, UInt64)') AS errors_by_class,
       sum(retries) AS retries,
       quantileExactInclusive(0.5)(toFloat64(Duration)) / 1e6 AS p50_ms,
       quantileExactInclusive(0.95)(toFloat64(Duration)) / 1e6 AS p95_ms
FROM calls
GROUP BY tool, agent
ORDER BY calls DESC, tool, agent
SETTINGS join_use_nulls = 1
