"""Runs: the list with filters, the top spenders, and one trace in detail.

A run's ``status`` is ``"error"`` exactly where it failed (its span, or its named agent's span,
has status Error: the framework raised), else ``"ok"``; how it ended is its
``termination_reason`` (rules ``RUN_STATUS`` and ``RUN_OK`` of :mod:`loopsight.vocabulary`).

Example:
    >>> list_runs(con, limit=10, agent="order-assistant", tool="search", min_tokens=1000)  # doctest: +SKIP
    [{'trace_id': '...', 'run_id': '...', 'agent': 'order-assistant', 'status': 'ok', ...}]
    >>> top_runs_by_tokens(con, limit=5)[0]["tokens"]  # doctest: +SKIP
    182345
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from loopsight.analytics.costs import trace_costs
from loopsight.analytics.loops import add_wasted_costs
from loopsight.analytics.sql import QUESTIONS, Connection, query
from loopsight.vocabulary import capture_setting

MAX_LIMIT = 10_000


def list_runs(
    con: Connection,
    *,
    limit: int = 50,
    offset: int = 0,
    agent: str | None = None,
    service: str | None = None,
    status: str | None = None,
    termination_reason: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    trace_id: str | None = None,
    tool: str | None = None,
    min_tokens: int | None = None,
    run_ids: list[str] | None = None,
    session: str | None = None,
    q: str | None = None,
) -> list[dict[str, Any]]:
    """Runs newest first, each with its rollups (steps, calls, errors, tokens, loops).

    ``tool`` keeps runs that called that tool at least once; ``min_tokens`` keeps runs whose
    input + output tokens (over their model calls) reach it; ``run_ids`` keeps those runs;
    ``session`` the runs of that session; ``q`` the runs a free-text search finds
    (:func:`search_traces`).
    Times are naive UTC; ``since`` is inclusive, ``until`` exclusive, on the run's start.

    Example:
        >>> list_runs(con, status="error", termination_reason="loop_detected")  # doctest: +SKIP
    """
    filters = run_filters(
        con, agent, service, status, termination_reason, since, until, trace_id, tool, min_tokens, run_ids, session, q
    )
    return query(con, "runs", limit=max(0, min(limit, MAX_LIMIT)), offset=max(0, offset), **filters)


def count_runs(
    con: Connection,
    *,
    agent: str | None = None,
    service: str | None = None,
    status: str | None = None,
    termination_reason: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    trace_id: str | None = None,
    tool: str | None = None,
    min_tokens: int | None = None,
    run_ids: list[str] | None = None,
    session: str | None = None,
    q: str | None = None,
) -> int:
    """How many runs :func:`list_runs` would give with these filters and no page (``total`` of ``/api/v1/runs``).

    Example:
        >>> count_runs(con, agent="order-assistant", status="error")  # doctest: +SKIP
        17
    """
    filters = run_filters(
        con, agent, service, status, termination_reason, since, until, trace_id, tool, min_tokens, run_ids, session, q
    )
    return int(query(con, "runs_count", **filters)[0]["runs"])


SEARCH_LIMIT = 10_000
"""At most this many traces a search finds (the newest)."""


def search_traces(
    con: Connection, q: str, *, since: datetime | None = None, until: datetime | None = None, limit: int = SEARCH_LIMIT
) -> list[str]:
    """The traces (newest first) whose runs match ``q``, case-insensitive: a trace id's start, or part of an
    agent, service, tool, error type or message, span name or attribute value (attributes are kept as
    the collector stored them: content only when captured).

    Example:
        >>> search_traces(con, "TimeoutError")  # doctest: +SKIP
        ['4bf92f3577b34da6a3ce929d0e0e4736', ...]
    """
    if not q.strip():
        raise ValueError("q must not be empty")
    found = query(con, "runs_search", q=q.strip(), since=since, until=until, limit=max(1, min(limit, SEARCH_LIMIT)))
    return [r["trace_id"] for r in found]


def run_filters(
    con: Connection,
    agent: str | None,
    service: str | None,
    status: str | None,
    termination_reason: str | None,
    since: datetime | None,
    until: datetime | None,
    trace_id: str | None,
    tool: str | None,
    min_tokens: int | None,
    run_ids: list[str] | None,
    session: str | None,
    q: str | None,
) -> dict[str, Any]:
    """The parameters of ``runs_filtered.sql`` for these run filters (a search ``q`` is resolved to the
    traces it finds first): the one definition the runs list, its count and the terminations share."""
    return {
        "agent": agent,
        "service": service,
        "status": status,
        "termination_reason": termination_reason,
        "since": since,
        "until": until,
        "trace_id": trace_id,
        "trace_ids": search_traces(con, q, since=since, until=until) if q else None,
        "tool": tool,
        "min_tokens": min_tokens,
        "run_ids": run_ids,
        "session": session,
    }


def top_runs_by_tokens(
    con: Connection,
    *,
    limit: int = 10,
    agent: str | None = None,
    service: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[dict[str, Any]]:
    """The runs that spent the most tokens, biggest first: Run dicts plus ``"tokens"``.

    Example:
        >>> [r["tokens"] for r in top_runs_by_tokens(con, limit=3)]  # doctest: +SKIP
        [91000, 45210, 12000]
    """
    limit = max(0, min(limit, MAX_LIMIT))
    top = query(con, "top_runs", limit=limit, agent=agent, service=service, since=since, until=until)
    if not top:
        return []
    found = {
        (run["trace_id"], run["run_id"]): run
        for run in list_runs(con, run_ids=[t["run_id"] for t in top], limit=MAX_LIMIT)
    }
    ranked = []
    for t in top:
        run = found.get((t["trace_id"], t["run_id"]))
        if run is not None:
            ranked.append({**run, "tokens": int(t["tokens"])})
    return ranked


def trace_detail(con: Connection, trace_id: str) -> dict[str, Any]:
    """The runs of one trace, all its spans, a per-step summary and the loops found in it.

    ``{"runs": [Run...], "spans": [Span...], "steps": [Step...], "loops": [Loop...]}``: each Span has the design's
    keys plus ``events`` (``[{"time", "name", "attributes"}]``: ``retry`` and
    ``loop_detected`` among them), ``cost_usd``, ``cache_read_input_tokens`` and
    ``cache_write_input_tokens`` (model calls with tokens; else ``None``); each Step is
    ``{"run_id", "step", "started_at", "duration_ms", "llm_calls", "tool_calls", "tool_errors",
    "retries", "retry_events", "loop_hits", "input_tokens", "output_tokens", "cost_usd"}``; each
    Loop (the loops detected in its runs, as ``/api/v1/loops`` lists them) is ``{"run_id", "kind",
    "tool", "count", "first_step", "wasted_tokens", "wasted_cost_usd", "scope", "no_progress"}``; ``stuck``: whether the trace is stuck (its run span has not arrived and it has been silent past
    the stuck threshold). A run whose tool calls carry no arguments
    (``arguments_captured`` false) has ``arguments_hint``: the setting of its instrumentation
    that turns capture on, or None when loopsight does not know it.

    Example:
        >>> detail = trace_detail(con, "4bf92f3577b34da6a3ce929d0e0e4736")  # doctest: +SKIP
        >>> detail["spans"][0]["kind"], detail["spans"][0]["status"]  # doctest: +SKIP
        ('agent', 'ok')
    """
    runs = list_runs(con, trace_id=trace_id, limit=MAX_LIMIT)
    if any(r["arguments_captured"] is False for r in runs):
        scopes = {r["run_id"]: r["scopes"] for r in query(con, "trace_tool_scopes", trace_id=trace_id)}
        for r in runs:
            if r["arguments_captured"] is False:
                r["arguments_hint"] = capture_setting(scopes.get(r["run_id"], []))
    spans = query(con, "trace_spans", trace_id=trace_id)
    steps = query(con, "trace_steps", trace_id=trace_id)
    _add_costs(spans, steps, trace_costs(con, trace_id))
    loops = query(con, "trace_loops", trace_id=trace_id)
    if loops:
        no_filters = {"since": None, "until": None, "agent": None, "service": None, "kind": None}
        sql = QUESTIONS.compose("loop_costs", loop_rows="loops_of_trace")
        add_wasted_costs(con, loops, sql, {**no_filters, "trace_id": trace_id})
    stuck = bool(spans) and not runs and _stuck(spans)
    return {"runs": runs, "spans": spans, "steps": steps, "loops": loops, "stuck": stuck}


def _stuck(spans: list[dict[str, Any]], now: datetime | None = None) -> bool:
    """A trace with model or tool calls whose run span has not arrived and whose last span ended more
    than the stuck threshold ago (the ``stuck`` rule of :mod:`loopsight.analytics.stalls`)."""
    from loopsight.analytics.stalls import STUCK_AFTER_SECONDS, STUCK_MAX_AGE_SECONDS

    if not any(s["kind"] in ("llm", "tool") for s in spans) or any(s["parent_span_id"] is None for s in spans):
        return False
    ends = [
        datetime.fromisoformat(s["start"].rstrip("Z")) + timedelta(milliseconds=s["duration_ms"] or 0) for s in spans
    ]
    silent = ((now or datetime.now(UTC).replace(tzinfo=None)) - max(ends)).total_seconds()
    return STUCK_AFTER_SECONDS < silent < STUCK_MAX_AGE_SECONDS


VALUE_FIELDS = ("agent", "service", "tool")


def field_values(
    con: Connection,
    field: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    limit: int = 1000,
) -> list[dict[str, Any]]:
    """The values ``field`` (``agent``, ``service`` or ``tool``) takes over the runs of the window, with
    the number of runs of each, most first (``/api/v1/values``: what a picker lists).

    Example:
        >>> field_values(con, "tool")[:2]  # doctest: +SKIP
        [{'value': 'search', 'runs': 812}, {'value': 'fetch_page', 'runs': 97}]
    """
    if field not in VALUE_FIELDS:
        raise ValueError(f"field must be one of {', '.join(VALUE_FIELDS)}, not {field!r}")
    return query(
        con,
        "values",
        field=field,
        since=since,
        until=until,
        agent=agent,
        service=service,
        limit=max(0, min(limit, MAX_LIMIT)),
    )


def _add_costs(spans: list[dict[str, Any]], steps: list[dict[str, Any]], calls: list[dict[str, Any]]) -> None:
    """Each model span's ``cost_usd`` (``None``: unpriced or no tokens), cache tokens and model
    pricing, and each step's ``cost_usd`` (``None`` when none of its calls is priced)."""
    by_span = {c["span_id"]: c for c in calls}
    for span in spans:
        call = by_span.get(span["span_id"])
        span["cost_usd"] = None if call is None else _usd(call["cost_usd"])
        span["cache_read_input_tokens"] = None if call is None else call["cache_read_tokens"]
        span["cache_write_input_tokens"] = None if call is None else call["cache_write_tokens"]
    per_step: dict[tuple[str, int | None], float] = {}
    for call in calls:
        if call["cost_usd"] is not None:
            key = (call["run_id"], call["step"])
            per_step[key] = per_step.get(key, 0.0) + call["cost_usd"]
    for step in steps:
        cost = per_step.get((step["run_id"], step["step"]))
        step["cost_usd"] = None if cost is None else _usd(cost)


def _usd(value: float | None) -> float | None:
    return None if value is None else round(value, 9)
