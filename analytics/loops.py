"""Loops: exact repeats, oscillations, repeated errors, semantic repeats and answers that make no
progress, per run, per session and over time.

The definitions are the contract in ``docs/detection.md``; the detection is one SQL pass
(``stores/sql/loops_core.sql``, window functions over the tool calls of each run and of each
session's runs) that the deriver runs for the traces each commit touches and keeps in
``run_loops``; the questions here read that table. Only runs whose run span has arrived are examined (a run in
flight shows up in :func:`loopsight.analytics.stalls.stalls` as ``stuck`` instead).

Example:
    >>> loops(con, agent="order-assistant")  # doctest: +SKIP
    [{'trace_id': '…', 'run_id': '…', 'tool': 'search', 'kind': 'exact', 'count': 4,
      'first_step': 1, 'wasted_tokens': 5120}]
    >>> loop_rate(con)  # doctest: +SKIP
    {'runs': 200, 'looping_runs': 37, 'loop_rate': 0.185}
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from loopsight import attributes as A
from loopsight.analytics.sql import QUESTIONS, Connection, run

compose = QUESTIONS.compose

MAX_LIMIT = 100_000


def _with_loops(name: str, session: str | None = None) -> str:
    # Each loop question reads the detected loops as the CTE ``loop_rows``: the rows of
    # loops_core.sql the deriver keeps in run_loops (loopsight.stores.derive); one session's
    # with ``session`` (the question's parameters then carry it).
    return compose(name, loop_rows="loops_of_session" if session is not None else "loops_derived")


def _params(
    since: datetime | None, until: datetime | None, agent: str | None, service: str | None, **extra: Any
) -> dict[str, Any]:
    params = {"since": since, "until": until, "agent": agent, "service": service}
    params.update(extra)
    return params


def loops(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    kind: str | None = None,
    limit: int = 1000,
    costs: bool = True,
    session: str | None = None,
) -> list[dict[str, Any]]:
    """The loops of runs started in [since, until), newest run first (the ``/api/v1/loops`` list).

    Each item: ``trace_id``, ``run_id``, ``tool`` (for an oscillation, its tools joined by
    ``,``), ``kind`` (``exact`` ``oscillation`` ``repeated_error`` ``semantic``
    ``no_progress``), ``count`` (calls in the loop), ``first_step``, ``wasted_tokens`` (model
    tokens spent after the loop's first call began), ``wasted_cost_usd`` (what those calls cost;
    ``None`` when none of them is priced; left out with ``costs=False``), ``scope`` (``run``, or
    ``session`` for a loop across the runs of one session, reported on the run of its last call),
    ``session_id`` and ``no_progress`` (true when every call of the loop returned the same result,
    false when the results changed, null when not known). ``session``: only the loops of that
    session's runs (theirs and those across them).

    Example:
        >>> loops(con, kind="oscillation", limit=5)  # doctest: +SKIP
        [{'trace_id': '…', 'run_id': '…', 'tool': 'fetch,search', 'kind': 'oscillation',
          'count': 4, 'first_step': 2, 'wasted_tokens': 3300}]
    """
    if kind is not None and kind not in A.LOOP_KINDS:
        raise ValueError(f"kind must be one of {', '.join(A.LOOP_KINDS)}, not {kind!r}")
    params = _params(since, until, agent, service, kind=kind, limit=max(0, min(limit, MAX_LIMIT)), session=session)
    found = run(con, "loops", _with_loops("loops", session), params)
    if costs and found:
        add_wasted_costs(con, found, _with_loops("loop_costs", session), params)
    return found


def add_wasted_costs(con: Connection, found: list[dict[str, Any]], sql: str, params: dict[str, Any]) -> None:
    """Give each loop of ``found`` its ``wasted_cost_usd``: what the calls its ``wasted_tokens``
    count cost (``sql``: loop_costs.sql over the loop rows ``found`` came from; ``None`` when none
    of them is priced, 0 when nothing was wasted). A loop without ``trace_id`` is of ``params``' one."""
    # Equal wasted tokens in a run: the same wasted calls (loop_costs.sql), so the key is the run and them.
    wasted = {
        (r["trace_id"], r["run_id"], r["wasted_tokens"]): r["wasted_cost_usd"]
        for r in run(con, "loop_costs", sql, params)
    }
    for loop in found:
        key = (loop.get("trace_id", params.get("trace_id")), loop["run_id"], loop["wasted_tokens"])
        loop["wasted_cost_usd"] = 0.0 if not loop["wasted_tokens"] else wasted.get(key)


def loop_counts(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    kind: str | None = None,
    session: str | None = None,
) -> dict[str, int]:
    """How many loops of each kind :func:`loops` would list without a limit.

    Example:
        >>> loop_counts(con, agent="order-assistant")  # doctest: +SKIP
        {'exact': 4, 'semantic': 2}
    """
    if kind is not None and kind not in A.LOOP_KINDS:
        raise ValueError(f"kind must be one of {', '.join(A.LOOP_KINDS)}, not {kind!r}")
    params = _params(since, until, agent, service, kind=kind, session=session)
    rows = run(con, "loops_counts", _with_loops("loops_counts", session), params)
    return {r["kind"]: r["loops"] for r in rows}


def loops_page(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    kind: str | None = None,
    limit: int = 1000,
    session: str | None = None,
) -> dict[str, Any]:
    """The ``/api/v1/loops`` answer: the loops :func:`loops` lists, how many of each kind the filters
    keep whatever the limit (``counts``, ``total``), and what they wasted, each looping run once
    (``looping_runs``, ``wasted_tokens``, ``wasted_cost_usd``: ``None`` when none of it is priced,
    ``unpriced_runs``).

    Example:
        >>> loops_page(con, agent="order-assistant", limit=10)["total"]  # doctest: +SKIP
        37
    """
    filters: dict[str, Any] = {"since": since, "until": until, "agent": agent, "service": service, "kind": kind}
    filters["session"] = session
    counts = loop_counts(con, **filters)
    waste = run(con, "loops_waste", _with_loops("loops_waste", session), filters)[0]
    return {
        "loops": loops(con, limit=limit, **filters),
        "counts": counts,
        "total": sum(counts.values()),
        "looping_runs": int(waste["looping_runs"]),
        "wasted_tokens": int(waste["wasted_tokens"]),
        # nothing wasted costs nothing (the SQL's sum over no run is NULL)
        "wasted_cost_usd": waste["wasted_cost_usd"] if waste["looping_runs"] else 0.0,
        "unpriced_runs": int(waste["unpriced_runs"]),
    }


def loop_rate(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
) -> dict[str, Any]:
    """Runs started in [since, until), how many looped, and the ratio (``None`` with no runs).

    Example:
        >>> loop_rate(con, since=datetime(2026, 1, 1))  # doctest: +SKIP
        {'runs': 200, 'looping_runs': 37, 'loop_rate': 0.185}
    """
    (row,) = run(con, "loops_rate", _with_loops("loops_rate"), _params(since, until, agent, service))
    runs, looping = row["runs"], row["looping_runs"]
    return {"runs": runs, "looping_runs": looping, "loop_rate": looping / runs if runs else None}


def loop_run_ids(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
) -> dict[tuple[str, str], list[str]]:
    """``{(trace_id, run_id): [kinds...]}`` for every run that looped.

    Example:
        >>> loop_run_ids(con)  # doctest: +SKIP
        {('4bf9…', '00f0…'): ['exact', 'oscillation']}
    """
    found = run(con, "loops_run_ids", _with_loops("loops_run_ids"), _params(since, until, agent, service))
    return {(r["trace_id"], r["run_id"]): r["kinds"] for r in found}


def loops_over_time(
    con: Connection,
    *,
    bucket_seconds: int = 3600,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
) -> list[dict[str, Any]]:
    """Per time bucket of run start: ``runs``, ``looping_runs``, ``loop_rate``, loops per kind, ``wasted_tokens``.

    Example:
        >>> loops_over_time(con, bucket_seconds=86400)  # doctest: +SKIP
        [{'bucket': '2026-01-01T00:00:00.000000Z', 'runs': 120, 'looping_runs': 9, 'loop_rate': 0.075,
          'exact': 4, 'oscillation': 2, 'repeated_error': 3, 'semantic': 1, 'wasted_tokens': 51234}]
    """
    if bucket_seconds < 1:
        raise ValueError("bucket_seconds must be at least 1")
    params = _params(since, until, agent, service, bucket_seconds=bucket_seconds, kind=None)
    return run(con, "loops_over_time", _with_loops("loops_over_time"), params)


def top_looping_tools(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    limit: int = 10,
) -> list[dict[str, Any]]:
    """The tools with the most loops: ``tool``, ``loops``, ``runs``, ``wasted_tokens`` and loops per kind.

    Example:
        >>> top_looping_tools(con, limit=3)  # doctest: +SKIP
        [{'tool': 'search', 'loops': 12, 'runs': 10, 'wasted_tokens': 80211, 'exact': 5, ...}]
    """
    params = _params(since, until, agent, service, limit=max(0, min(limit, MAX_LIMIT)))
    return run(con, "loops_top_tools", _with_loops("loops_top_tools"), params)


def top_looping_args(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    limit: int = 10,
) -> list[dict[str, Any]]:
    """The (tool, args hash) pairs repeated in the most exact loops: ``loops``, ``runs``, ``calls``, ``wasted_tokens``.

    Example:
        >>> top_looping_args(con, limit=1)  # doctest: +SKIP
        [{'tool': 'search', 'args_hash': '9f2c…', 'loops': 4, 'runs': 4, 'calls': 14, 'wasted_tokens': 20400}]
    """
    params = _params(since, until, agent, service, limit=max(0, min(limit, MAX_LIMIT)))
    return run(con, "loops_top_args", _with_loops("loops_top_args"), params)
