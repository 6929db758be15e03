"""The alert metrics: one value over a time window, with its sample size and example runs.

Each metric has a *population* (runs, tool calls, ...) and counts the *hits* in it; the
value is hits / population for rates, a percentile for ``tokens_per_run`` and ``cost_per_run``
(USD, over the runs with a priced model call), the sum of those runs' cost for ``cost``, and a
count for ``stuck_runs``. Definitions are the analytics layer's: a run is a top-level
``invoke_agent`` span in the window of its start (``list_runs``); a tool call fails when
its status is Error and belongs to its run's agent (``tool_stats``); loops, stalls and
stuck runs are what ``analytics.loops`` / ``analytics.stalls`` detect (docs/detection.md).

Example:
    >>> m = measure(con, MetricSpec("loop_rate", agent="order-assistant"), since, until)  # doctest: +SKIP
    >>> m.value, m.samples, m.examples  # doctest: +SKIP
    (0.4, 10, ['5b8aa5a2d2c872e8321cf37308d69df2', ...])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from loopsight.analytics.loops import MAX_LIMIT as LOOPS_LIMIT
from loopsight.analytics.loops import loops
from loopsight.analytics.sql import QUESTIONS, Connection
from loopsight.analytics.stalls import MAX_LIMIT as STALLS_LIMIT
from loopsight.analytics.stalls import stalls

METRICS = (
    "loop_rate",
    "tool_fail_rate",
    "error_class_rate",
    "termination_rate",
    "tokens_per_run",
    "stall_rate",
    "stuck_runs",
    "cost_per_run",
    "cost",
)
RATE_METRICS = frozenset({"loop_rate", "tool_fail_rate", "error_class_rate", "termination_rate", "stall_rate"})
STATS = ("p50", "p95", "max")
STAT_METRICS = frozenset({"tokens_per_run", "cost_per_run"})
"""The metrics that are a statistic (``stat``) of a per-run value."""


@dataclass(frozen=True)
class MetricSpec:
    """What to measure: a metric with its filters and parameters (rule conditions excluded)."""

    metric: str
    service: str | None = None
    agent: str | None = None
    tool: str | None = None
    error_class: str | None = None
    reason: str | None = None
    stat: str = "p95"
    stuck_after_seconds: float = 300.0

    def filters(self) -> dict[str, Any]:
        """The non-empty filters and parameters, for display and for the query API."""
        out: dict[str, Any] = {}
        for key in ("service", "agent", "tool", "error_class", "reason"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.metric in STAT_METRICS:
            out["stat"] = self.stat
        if self.metric == "stuck_runs":  # seconds, whole when they are (300, not 300.0)
            seconds = self.stuck_after_seconds
            out["stuck_after"] = int(seconds) if float(seconds).is_integer() else seconds
        return out


MAX_EXAMPLES = 5
GAUGE_WINDOW_SECONDS = 300.0  # the /metrics gauges cover the last 5 minutes (docs/alerts.md)

# Runs in the window, by the start of their run span (as /api/v1/runs filters them).
_RUNS = """
runs AS (
    SELECT trace_id, run_id, started_at AS started, agent, termination_reason, status_code AS status,
           input_tokens + output_tokens AS tokens, cost_usd AS cost
    FROM run_facts
    WHERE started_at >= $since::TIMESTAMP AND started_at < $until::TIMESTAMP
      AND ($agent::VARCHAR IS NULL OR agent = $agent)
      AND ($service::VARCHAR IS NULL OR service = $service)
)"""

# Calls (tool or model spans) in the window; a call's agent is its run's agent.
_CALLS = """
calls AS (
    SELECT c."TraceId" AS trace_id, c."Timestamp" AS started, c.span_type, c.tool,
           c."StatusCode" = 'Error' AS failed, c.error_class, c."Duration" AS duration
    FROM spans c
    LEFT JOIN run_facts r ON r.trace_id = c."TraceId" AND r.run_id = c.run_id
    WHERE c.span_type IN ('tool', 'llm')
      AND c."Timestamp" >= $since::TIMESTAMP AND c."Timestamp" < $until::TIMESTAMP
      AND ($service::VARCHAR IS NULL OR c."ServiceName" = $service)
      AND ($agent::VARCHAR IS NULL OR coalesce(r.agent, c.agent) = $agent)
)"""

_POPULATIONS = {
    "termination_rate": f"WITH {_RUNS}, population AS ("
    " SELECT trace_id, started, termination_reason IS NOT DISTINCT FROM $reason AS hit FROM runs)",
    "tool_fail_rate": f"WITH {_CALLS}, population AS ("
    " SELECT trace_id, started, failed AND ($error_class::VARCHAR IS NULL OR error_class = $error_class) AS hit"
    " FROM calls WHERE span_type = 'tool' AND ($tool::VARCHAR IS NULL OR tool = $tool))",
    "error_class_rate": f"WITH {_CALLS}, population AS ("
    " SELECT trace_id, started, error_class IS NOT DISTINCT FROM $error_class AS hit"
    " FROM calls WHERE ($tool::VARCHAR IS NULL OR (span_type = 'tool' AND tool = $tool)))",
}

_RATE_SELECT = """
SELECT (SELECT count(*) FROM population) AS samples,
       (SELECT count(*) FROM population WHERE hit) AS hits,
       (SELECT coalesce(list({'trace_id': trace_id, 'key': latest}), [])
          FROM (SELECT trace_id, max(started) AS latest FROM population WHERE hit
                GROUP BY trace_id ORDER BY latest DESC, trace_id LIMIT $examples)) AS examples
"""

_TOKENS = f"""
WITH {_RUNS},
per_run AS (SELECT trace_id, started, tokens FROM runs)
SELECT count(*) AS samples,
       quantile_cont(tokens, 0.5) AS p50,
       quantile_cont(tokens, 0.95) AS p95,
       max(tokens) AS max,
       (SELECT coalesce(list({{'trace_id': trace_id, 'key': tokens}}), [])
          FROM (SELECT trace_id, tokens FROM per_run ORDER BY tokens DESC, trace_id LIMIT $examples)) AS examples
FROM per_run
"""


# Each run in the window with a priced model call, and its cost (stored in run_facts: the sum of its
# priced calls, as priced_calls.sql holds them).
_COST = f"""
WITH {_RUNS},
per_run AS (SELECT trace_id, started, cost FROM runs WHERE cost IS NOT NULL)
SELECT count(*) AS samples,
       quantile_cont(cost, 0.5) AS p50,
       quantile_cont(cost, 0.95) AS p95,
       max(cost) AS max,
       sum(cost) AS total,
       (SELECT coalesce(list({{'trace_id': trace_id, 'key': cost}}), [])
          FROM (SELECT trace_id, cost FROM per_run ORDER BY cost DESC, trace_id LIMIT $examples)) AS examples
FROM per_run
"""


def _ranked(examples: list[dict[str, Any]]) -> list[str]:
    """The example runs' trace ids, the highest key first, ties by id: the statements list the
    examples they picked unordered, which both engines can write (no ordered aggregate)."""
    by_id = sorted(examples, key=lambda e: e["trace_id"])
    return [e["trace_id"] for e in sorted(by_id, key=lambda e: (e["key"] is not None, e["key"]), reverse=True)]


def _execute(con: Connection, name: str, duckdb_sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Run metric statement ``name`` (DuckDB SQL; a ClickHouse reader runs its translation): rows as tuples."""
    return [tuple(row.values()) for row in con.rows(duckdb_sql, params)]


@dataclass(frozen=True)
class Measurement:
    """A metric's value over a window (``None`` when there was nothing to measure)."""

    value: float | None
    samples: int
    examples: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "samples": self.samples, "examples": list(self.examples)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        value = data.get("value")
        return cls(
            None if value is None else float(value),
            int(data.get("samples") or 0),
            [str(x) for x in (data.get("examples") or [])][:MAX_EXAMPLES],
        )


def measure(
    con: Connection,
    spec: MetricSpec,
    since: datetime,
    until: datetime,
    cache: dict[Any, Measurement] | None = None,
) -> Measurement:
    """The value of ``spec`` over ``[since, until)`` (naive UTC), with sample size and example trace ids.

    ``cache`` (a dict kept for one evaluation round) saves measuring the same thing twice.

    Example:
        >>> measure(con, MetricSpec("tool_fail_rate", tool="fetch"), since, until)  # doctest: +SKIP
        Measurement(value=0.5, samples=8, examples=['...'])
    """
    if cache is not None:
        key = (spec, since, until)
        if key not in cache:
            cache[key] = measure(con, spec, since, until)
        return cache[key]
    params: dict[str, Any] = {
        "since": since,
        "until": until,
        "agent": spec.agent,
        "service": spec.service,
        "tool": spec.tool,
        "error_class": spec.error_class,
        "reason": spec.reason,
        "examples": MAX_EXAMPLES,
        "stuck_before": until - timedelta(seconds=spec.stuck_after_seconds),
    }
    if spec.metric == "tokens_per_run":
        return _tokens_per_run(con, params)[spec.stat]
    if spec.metric in ("cost_per_run", "cost"):
        costs = _cost_per_run(con, params)
        return costs["total" if spec.metric == "cost" else spec.stat]
    if spec.metric == "loop_rate":
        return _loop_rate(con, spec, since, until)
    if spec.metric == "stall_rate":
        return _stall_rate(con, spec, since, until)
    if spec.metric == "stuck_runs":
        stuck = stalls(
            con,
            kind="stuck",
            agent=spec.agent,
            service=spec.service,
            now=until,
            stuck_after_seconds=spec.stuck_after_seconds,
            stuck_max_age_seconds=max((until - since).total_seconds(), spec.stuck_after_seconds + 1),
            limit=STALLS_LIMIT,
        )
        traces = _distinct(s["trace_id"] for s in stuck)
        return Measurement(float(len(traces)), len(traces), traces[:MAX_EXAMPLES])
    sql = _POPULATIONS[spec.metric] + _RATE_SELECT
    samples, hits, examples = _execute(con, spec.metric, sql, params)[0]
    return Measurement(hits / samples if samples else None, int(samples), _ranked(examples))


def _distinct(values: Any) -> list[Any]:
    return list(dict.fromkeys(values))


def _runs_in(con: Connection, spec: MetricSpec, since: datetime, until: datetime) -> int:
    sql = f"WITH {_RUNS} SELECT count(*) FROM runs"
    return int(
        _execute(con, "runs_in", sql, {"since": since, "until": until, "agent": spec.agent, "service": spec.service})[
            0
        ][0]
    )


def _tokens_per_run(con: Connection, params: dict[str, Any]) -> dict[str, Measurement]:
    samples, p50, p95, top, examples = _execute(con, "tokens", _TOKENS, params)[0]
    return {
        stat: Measurement(None if not samples else float(value), int(samples), _ranked(examples))
        for stat, value in (("p50", p50), ("p95", p95), ("max", top))
    }


def _cost_per_run(con: Connection, params: dict[str, Any]) -> dict[str, Measurement]:
    samples, p50, p95, top, total, examples = _execute(con, "cost", _COST, params)[0]
    return {
        stat: Measurement(None if not samples else float(value), int(samples), _ranked(examples))
        for stat, value in (("p50", p50), ("p95", p95), ("max", top), ("total", total))
    }


def _loop_rate(con: Connection, spec: MetricSpec, since: datetime, until: datetime) -> Measurement:
    # loops() lists every loop (newest run first); its distinct runs are loop_rate()'s looping runs,
    # so one detection pass gives the rate, the tool filter and the examples.
    found = loops(con, since=since, until=until, agent=spec.agent, service=spec.service, limit=LOOPS_LIMIT, costs=False)
    if spec.tool is not None:  # an oscillation's tool is its tools joined by ","
        found = [f for f in found if spec.tool in (f["tool"] or "").split(",")]
    looping = _distinct((f["trace_id"], f["run_id"]) for f in found)
    runs = _runs_in(con, spec, since, until)
    return Measurement(len(looping) / runs if runs else None, runs, _distinct(t for t, _ in looping)[:MAX_EXAMPLES])


def _stall_rate(con: Connection, spec: MetricSpec, since: datetime, until: datetime) -> Measurement:
    found = stalls(con, since=since, until=until, agent=spec.agent, service=spec.service, now=until, limit=STALLS_LIMIT)
    stalled = _distinct(
        (s["trace_id"], s["run_id"])
        for s in found
        if s["kind"] != "stuck" and (spec.tool is None or s["tool"] == spec.tool)
    )
    runs = _runs_in(con, spec, since, until)
    return Measurement(len(stalled) / runs if runs else None, runs, _distinct(t for t, _ in stalled)[:MAX_EXAMPLES])


@dataclass(frozen=True)
class Gauge:
    """One Prometheus sample: ``name{labels} value``."""

    name: str
    value: float
    labels: tuple[tuple[str, str], ...] = ()
    help: str = ""


_GAUGE_HELP = {
    "loopsight_loop_rate": "Share of runs that looped, over the gauge window.",
    "loopsight_tool_fail_rate": "Share of tool calls that failed, per tool, over the gauge window.",
    "loopsight_tool_calls": "Tool calls per tool over the gauge window (the fail rate's sample size).",
    "loopsight_error_class_rate": "Share of tool and model calls with each error class, over the gauge window.",
    "loopsight_termination_rate": "Share of runs ending with each termination reason, over the gauge window.",
    "loopsight_tokens_per_run": "Tokens (input + output) per run over the gauge window, by quantile.",
    "loopsight_stall_rate": "Share of runs with a stall (slow call, retry backoff, idle gap), over the gauge window.",
    "loopsight_stuck_runs": "Runs in flight whose last span ended more than 5 minutes ago.",
    "loopsight_runs": "Runs started in the gauge window (the sample size of the run rates).",
    "loopsight_cost_usd_total": "USD of the priced model calls this collector received since it started, "
    "by run agent and model (prices as of its start).",
    "loopsight_unpriced_calls_total": "Model calls with tokens whose model has no price, received since this "
    "collector started, by run agent and model.",
}

# What the model calls received since ``$received_since`` (the collector's start) cost, per agent and model.
_COST_TOTALS = f"""
WITH priced AS ({QUESTIONS.load("priced_calls")})
SELECT coalesce(agent, '') AS agent, model, coalesce(sum(cost_usd), 0) AS cost_usd,
       count(*) FILTER (WHERE NOT priced) AS unpriced_calls
FROM priced
WHERE ingested_at >= $received_since::TIMESTAMP
GROUP BY coalesce(agent, ''), model
ORDER BY 1, 2
"""

_TOOL_GAUGES = f"""
WITH {_CALLS}
SELECT tool, count(*) AS calls, count(*) FILTER (WHERE failed) / count(*) AS fail_rate
FROM calls WHERE span_type = 'tool' GROUP BY tool ORDER BY tool
"""
_CLASS_GAUGES = f"""
WITH {_CALLS}
SELECT error_class, count(*) / (SELECT count(*) FROM calls) AS rate
FROM calls WHERE error_class IS NOT NULL GROUP BY error_class ORDER BY error_class
"""
_REASON_GAUGES = f"""
WITH {_RUNS}
SELECT coalesce(termination_reason, 'unknown'), count(*) / (SELECT count(*) FROM runs) AS rate
FROM runs GROUP BY ALL ORDER BY 1
"""


def gauges(
    con: Connection,
    since: datetime,
    until: datetime,
    cache: dict[Any, Measurement] | None = None,
    *,
    totals_since: datetime | None = None,
) -> list[Gauge]:
    """Every metric over ``[since, until)`` as Prometheus gauges (per tool, class, reason); with
    ``totals_since`` (when the collector started) also the counters of what the model calls it
    received since then cost (``loopsight_cost_usd_total{agent, model}``,
    ``loopsight_unpriced_calls_total``; calls count once their run is derived).

    Example:
        >>> [g.name for g in gauges(con, since, until)][:2]  # doctest: +SKIP
        ['loopsight_runs', 'loopsight_loop_rate']
    """
    params: dict[str, Any] = {"since": since, "until": until, "agent": None, "service": None}
    out: list[Gauge] = []
    loops = measure(con, MetricSpec("loop_rate"), since, until, cache)
    out.append(Gauge("loopsight_runs", float(loops.samples)))
    out.append(Gauge("loopsight_loop_rate", loops.value or 0.0))
    for tool, calls, rate in _execute(con, "tool_gauges", _TOOL_GAUGES, params):
        labels = (("tool", tool or ""),)
        out.append(Gauge("loopsight_tool_fail_rate", float(rate), labels))
        out.append(Gauge("loopsight_tool_calls", float(calls), labels))
    for error_class, rate in _execute(con, "class_gauges", _CLASS_GAUGES, params):
        out.append(Gauge("loopsight_error_class_rate", float(rate), (("error_class", error_class),)))
    for reason, rate in _execute(con, "reason_gauges", _REASON_GAUGES, params):
        out.append(Gauge("loopsight_termination_rate", float(rate), (("reason", reason),)))
    tokens = _tokens_per_run(con, {**params, "examples": MAX_EXAMPLES})
    for stat, quantile in (("p50", "0.5"), ("p95", "0.95"), ("max", "1")):
        out.append(Gauge("loopsight_tokens_per_run", tokens[stat].value or 0.0, (("quantile", quantile),)))
    out.append(Gauge("loopsight_stall_rate", measure(con, MetricSpec("stall_rate"), since, until, cache).value or 0.0))
    stuck_since = until - timedelta(hours=1)
    out.append(
        Gauge("loopsight_stuck_runs", float(measure(con, MetricSpec("stuck_runs"), stuck_since, until, cache).samples))
    )
    if totals_since is not None:
        out += cost_totals(con, totals_since)
    return [Gauge(g.name, g.value, g.labels, _GAUGE_HELP.get(g.name, "")) for g in out]


def cost_totals(con: Connection, since: datetime) -> list[Gauge]:
    """The cost counters of the model calls received (stored) since ``since``, per agent and model.

    Example:
        >>> cost_totals(con, collector_started)  # doctest: +SKIP
        [Gauge(name='loopsight_cost_usd_total', value=0.42, labels=(('agent', 'support'), ('model', 'gpt-4o')), help='')]
    """
    params = {"since": None, "until": None, "agent": None, "service": None, "received_since": since}
    out: list[Gauge] = []
    rows = _execute(con, "cost_totals", _COST_TOTALS, params)
    for agent, model, cost, _ in rows:
        out.append(Gauge("loopsight_cost_usd_total", float(cost), (("agent", agent), ("model", model))))
    for agent, model, _, unpriced in rows:
        out.append(Gauge("loopsight_unpriced_calls_total", float(unpriced), (("agent", agent), ("model", model))))
    return out


def store_clock(con: Connection) -> datetime:
    """The store's own clock, as it stamps ``ingested_at`` (the start of the cost counters)."""
    (row,) = con.rows("SELECT now()::TIMESTAMP AS now")
    return datetime.fromisoformat(str(row["now"]).rstrip("Z"))


class ReaderMeasures:
    """Measures on one open reader, each (metric, window) once: one evaluation round's source.

    Example:
        >>> ReaderMeasures(reader).measure(MetricSpec("loop_rate"), since, until)  # doctest: +SKIP
        Measurement(value=0.1, samples=20, examples=[...])
    """

    def __init__(self, reader: Connection) -> None:
        self.reader = reader
        self.cache: dict[Any, Measurement] = {}

    def measure(self, spec: MetricSpec, since: datetime, until: datetime) -> Measurement:
        return measure(self.reader, spec, since, until, self.cache)
