"""The ClickHouse text of the alert metrics' SQL (:mod:`loopsight.alerts.metrics` has the DuckDB text).

Same populations, hits, examples and gauges, over the ClickHouse ``spans`` view
(:mod:`loopsight.stores.clickhouse_schema`), with ``{name:Type}`` parameters. The metrics
built on the analytics (``loop_rate``, ``stall_rate``, ``stuck_runs``) need nothing here:
the analytics pick their own ClickHouse SQL.

Example:
    >>> sorted(STATEMENTS)[:2]
    ['class_gauges', 'error_class_rate']
"""

from __future__ import annotations

_SINCE = "{since:DateTime64(6, 'UTC')}"
_UNTIL = "{until:DateTime64(6, 'UTC')}"

_RUNS = f"""
runs AS (
    SELECT TraceId AS trace_id, run_id, Timestamp AS started, agent, termination_reason, StatusCode AS status
    FROM typed_spans
    WHERE span_type = 'agent' AND SpanId = run_id
      AND Timestamp >= {_SINCE} AND Timestamp < {_UNTIL}
      AND ({{agent:Nullable(String)}} IS NULL OR agent = {{agent:Nullable(String)}})
      AND ({{service:Nullable(String)}} IS NULL OR ServiceName = {{service:Nullable(String)}})
)"""

_CALLS = f"""
calls AS (
    SELECT c.TraceId AS trace_id, c.Timestamp AS started, c.span_type AS span_type, c.tool AS tool,
           c.StatusCode = 'Error' AS failed, c.error_class AS error_class, c.Duration AS duration
    FROM typed_spans c
    LEFT JOIN (SELECT TraceId, SpanId, agent FROM typed_spans WHERE span_type = 'agent') r
           ON r.TraceId = c.TraceId AND r.SpanId = c.run_id
    WHERE c.span_type IN ('tool', 'llm')
      AND c.Timestamp >= {_SINCE} AND c.Timestamp < {_UNTIL}
      AND ({{service:Nullable(String)}} IS NULL OR c.ServiceName = {{service:Nullable(String)}})
      AND ({{agent:Nullable(String)}} IS NULL OR coalesce(r.agent, c.agent) = {{agent:Nullable(String)}})
)"""


def _same(column: str, param: str) -> str:
    # IS NOT DISTINCT FROM
    return f"if(isNull({{{param}:Nullable(String)}}), isNull({column}), ifNull({column} = {{{param}:Nullable(String)}}, false))"


_RATE_SELECT = """
SELECT (SELECT count() FROM population) AS samples,
       (SELECT countIf(hit) FROM population) AS hits,
       (SELECT arraySlice(arrayMap(x -> x.2, arraySort(x -> (-toUnixTimestamp64Micro(x.1), x.2), groupArray((latest, trace_id)))),
                          1, {examples:UInt64})
          FROM (SELECT trace_id, max(started) AS latest FROM population WHERE hit GROUP BY trace_id)) AS examples
SETTINGS join_use_nulls = 1"""

STATEMENTS: dict[str, str] = {
    "termination_rate": f"WITH {_RUNS}, population AS ("
    f" SELECT trace_id, started, {_same('termination_reason', 'reason')} AS hit FROM runs)" + _RATE_SELECT,
    "tool_fail_rate": f"WITH {_CALLS}, population AS ("
    " SELECT trace_id, started, failed AND ({error_class:Nullable(String)} IS NULL OR ifNull(error_class = {error_class:Nullable(String)}, false)) AS hit"
    " FROM calls WHERE span_type = 'tool' AND ({tool:Nullable(String)} IS NULL OR tool = {tool:Nullable(String)}))"
    + _RATE_SELECT,
    "error_class_rate": f"WITH {_CALLS}, population AS ("
    f" SELECT trace_id, started, {_same('error_class', 'error_class')} AS hit"
    " FROM calls WHERE ({tool:Nullable(String)} IS NULL OR (span_type = 'tool' AND tool = {tool:Nullable(String)})))"
    + _RATE_SELECT,
    "runs_in": f"WITH {_RUNS} SELECT count() FROM runs",
    "tokens": f"""
WITH {_RUNS},
per_run AS (
    SELECT r.trace_id AS trace_id, r.started AS started,
           toInt64(ifNull(sum(ifNull(s.input_tokens, 0) + ifNull(s.output_tokens, 0)), 0)) AS tokens
    FROM runs r
    LEFT JOIN (SELECT TraceId, run_id, input_tokens, output_tokens FROM typed_spans WHERE span_type = 'llm') s
           ON s.TraceId = r.trace_id AND s.run_id = r.run_id
    GROUP BY r.trace_id, r.run_id, r.started
)
SELECT count() AS samples,
       quantileExactInclusive(0.5)(toFloat64(tokens)) AS p50,
       quantileExactInclusive(0.95)(toFloat64(tokens)) AS p95,
       max(tokens) AS max,
       arraySlice(arrayMap(x -> x.2, arraySort(x -> (-x.1, x.2), groupArray((tokens, trace_id)))), 1, {{examples:UInt64}}) AS examples
FROM per_run
SETTINGS join_use_nulls = 1""",
    "tool_gauges": f"""
WITH {_CALLS}
SELECT tool, count() AS calls, countIf(failed) / count() AS fail_rate
FROM calls WHERE span_type = 'tool' GROUP BY tool ORDER BY tool
SETTINGS join_use_nulls = 1""",
    "class_gauges": f"""
WITH {_CALLS}
SELECT error_class, count() / (SELECT count() FROM calls) AS rate
FROM calls WHERE error_class IS NOT NULL GROUP BY error_class ORDER BY error_class
SETTINGS join_use_nulls = 1""",
    "reason_gauges": f"""
WITH {_RUNS}
SELECT ifNull(termination_reason, 'unknown') AS reason, count() / (SELECT count() FROM runs) AS rate
FROM runs GROUP BY reason ORDER BY reason""",
}
