"""Overview KPI tiles, each with its value over the previous window of equal length.

Tiles: ``runs``, ``success_rate`` (runs with status ok / runs), ``loop_rate`` (runs with a
loop / runs), ``tool_fail_rate`` (failed tool calls / tool calls of those runs),
``tokens_per_success`` (input + output tokens of ok runs / ok runs) and
``p95_duration_ms`` (95th percentile of run durations), ``cost_usd`` (what the runs' priced
model calls cost) and ``cost_per_success_usd`` (per ok run with a priced call; both ``None``
when no call is priced). Every tile counts the runs that started in the window.

Which runs "have a loop" is swappable: by default the runs where
:mod:`loopsight.analytics.loops` detects one (docs/detection.md: what the Loops page lists and
the ``loop_rate`` alert measures, for any producer); pass ``loop_runs=<function>`` (or set
:data:`DEFAULT_LOOP_RUNS`) to count them otherwise, e.g. :func:`marked_loop_runs` for the loop
guard's own marks only.

Example:
    >>> overview(con, since=datetime(2026, 1, 2), until=datetime(2026, 1, 3))  # doctest: +SKIP
    {'window': {'since': '2026-01-02T00:00:00.000000Z', 'until': '2026-01-03T00:00:00.000000Z'},
     'previous_window': {'since': '2026-01-01T00:00:00.000000Z', 'until': '2026-01-02T00:00:00.000000Z'},
     'tiles': {'runs': {'value': 120, 'previous': 100, 'change': 20, 'change_pct': 0.2}, ...}}
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from loopsight.analytics.loops import loop_rate
from loopsight.analytics.sql import Connection, jsonable, query

DEFAULT_WINDOW = timedelta(hours=24)
TILES = (
    "runs",
    "success_rate",
    "loop_rate",
    "tool_fail_rate",
    "tokens_per_success",
    "p95_duration_ms",
    "cost_usd",
    "cost_per_success_usd",
)


class LoopRuns(Protocol):
    """Counts the runs started in ``[since, until)`` (matching the filters) that have a loop."""

    def __call__(
        self,
        con: Connection,
        *,
        since: datetime,
        until: datetime,
        agent: str | None,
        service: str | None,
    ) -> int: ...


def marked_loop_runs(
    con: Connection, *, since: datetime, until: datetime, agent: str | None, service: str | None
) -> int:
    """Runs holding a span with ``loop_kind`` set (the loop guard's own record).

    Example:
        >>> marked_loop_runs(con, since=datetime(2026, 1, 1), until=datetime(2026, 1, 2), agent=None, service=None)  # doctest: +SKIP
        7
    """
    return int(query(con, "loop_runs", since=since, until=until, agent=agent, service=service)[0]["runs"])


def detected_loop_runs(
    con: Connection, *, since: datetime, until: datetime, agent: str | None, service: str | None
) -> int:
    """Runs with a loop that :func:`loopsight.analytics.loops.loop_rate` counts.

    Example:
        >>> detected_loop_runs(con, since=datetime(2026, 1, 1), until=datetime(2026, 1, 2), agent=None, service=None)  # doctest: +SKIP
        9
    """
    return int(loop_rate(con, since=since, until=until, agent=agent, service=service)["looping_runs"])


DEFAULT_LOOP_RUNS: LoopRuns | None = detected_loop_runs
"""The counter used when ``overview`` is given none; ``None`` counts the loop guard's marks
inside the overview query itself (as :func:`marked_loop_runs`)."""


def window(
    since: datetime | None, until: datetime | None, now: datetime | None = None
) -> tuple[datetime, datetime, datetime]:
    """``(previous_since, since, until)``: an open end is now, an open start 24 h before the end.

    Raises ``ValueError`` when ``since`` is not before ``until``.

    Example:
        >>> window(datetime(2026, 1, 2), datetime(2026, 1, 3))[0]
        datetime.datetime(2026, 1, 1, 0, 0)
    """
    if until is None:
        until = now or datetime.now(UTC).replace(tzinfo=None)
    if since is None:
        since = until - DEFAULT_WINDOW
    if since >= until:
        raise ValueError("since must be before until")
    try:
        previous_since = since - (until - since)
    except OverflowError:
        previous_since = datetime.min
    return previous_since, since, until


def _tile(value: float | int | None, previous: float | int | None) -> dict[str, Any]:
    change = None if value is None or previous is None else value - previous
    change_pct = None if change is None or not previous else change / previous
    return {"value": value, "previous": previous, "change": change, "change_pct": change_pct}


def _ratio(part: float | int | None, whole: float | int | None) -> float | None:
    return None if not whole or part is None else part / whole


def overview(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    now: datetime | None = None,
    loop_runs: LoopRuns | None = None,
) -> dict[str, Any]:
    """The KPI tiles for ``[since, until)`` against ``[since - (until - since), since)``.

    Each tile is ``{"value", "previous", "change", "change_pct"}``: ``change`` is
    ``value - previous`` in the tile's unit (rates are 0..1, so a rate's change is in
    points), ``change_pct`` is ``change / previous``; a rate over no runs is ``None``.

    Example:
        >>> overview(con, since=datetime(2026, 1, 2), until=datetime(2026, 1, 3))["tiles"]["success_rate"]  # doctest: +SKIP
        {'value': 0.9, 'previous': 0.8, 'change': 0.1, 'change_pct': 0.125}
    """
    previous_since, since, until = window(since, until, now)
    filters = {"agent": agent, "service": service}
    found = {
        row["current"]: row
        for row in query(con, "overview", previous_since=previous_since, since=since, until=until, **filters)
    }
    costs = {
        row["current"]: row
        # priced_calls.sql's window is both of the tiles' windows: [previous_since, until)
        for row in query(con, "overview_cost", since=previous_since, current_since=since, until=until, **filters)
    }
    count_loops = loop_runs or DEFAULT_LOOP_RUNS
    windows = {True: (since, until), False: (previous_since, since)}
    values: dict[bool, dict[str, Any]] = {}
    for current, (start, end) in windows.items():
        row = found.get(current, {})
        runs = int(row.get("runs", 0))
        ok_runs = int(row.get("ok_runs", 0))
        if count_loops is None or not runs:
            looped = int(row.get("looped_runs", 0))
        else:
            looped = count_loops(con, since=start, until=end, **filters)
        values[current] = {
            "runs": runs,
            "success_rate": _ratio(ok_runs, runs),
            "loop_rate": _ratio(looped, runs),
            "tool_fail_rate": _ratio(row.get("tool_errors"), row.get("tool_calls")),
            "tokens_per_success": _ratio(row.get("ok_tokens"), ok_runs),
            "p95_duration_ms": row.get("p95_duration_ms"),
            "cost_usd": costs.get(current, {}).get("cost_usd"),
            "cost_per_success_usd": costs.get(current, {}).get("cost_per_success_usd"),
        }
    return {
        "window": {"since": jsonable(since), "until": jsonable(until)},
        "previous_window": {"since": jsonable(previous_since), "until": jsonable(since)},
        "tiles": {name: _tile(values[True][name], values[False][name]) for name in TILES},
    }
