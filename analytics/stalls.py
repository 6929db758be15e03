"""Stalls: slow calls, time in retry backoff, idle gaps inside runs, stuck runs, time to first tool call.

The rules are the contract in ``docs/detection.md``:

* ``slow_call``: a tool call (or model call) longer than ``max(exp(m + 4 max(1.4826 MAD, 0.3)),
  exp(m) + 500 ms)``, ``m`` and ``MAD`` the median and median absolute deviation of the log of
  that tool's latency for that agent (across agents when the agent has fewer than
  ``min_samples`` calls of it; with fewer than that overall it is not judged); ``expected_ms``
  is that threshold. Robust: the slow calls cannot lift it, however large their share.
* ``backoff``: a tool call whose ``retry`` events add up to ``min_backoff_ms`` of backoff or more.
* ``idle_gap``: a stretch inside a run covered by none of its spans, longer than ``min_gap_ms``.
* ``stuck``: a trace whose run span has not arrived and whose last span ended more than
  ``stuck_after_seconds`` before ``now`` (but less than ``stuck_max_age_seconds``).

Example:
    >>> stalls(con, kind="stuck", stuck_after_seconds=120)  # doctest: +SKIP
    [{'trace_id': '…', 'run_id': None, 'span_id': '…', 'kind': 'stuck', 'tool': 'search',
      'duration_ms': 431000.0, 'expected_ms': 120000.0}]
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from loopsight.analytics.sql import QUESTIONS, Connection, run

compose = QUESTIONS.compose

STALL_KINDS = ("slow_call", "backoff", "idle_gap", "stuck")
MIN_SAMPLES = 20
MIN_BACKOFF_MS = 1000.0
MIN_GAP_MS = 2000.0
STUCK_AFTER_SECONDS = 300.0
STUCK_MAX_AGE_SECONDS = 6 * 3600.0
MAX_LIMIT = 100_000


def stalls(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    kind: str | None = None,
    now: datetime | None = None,
    stuck_after_seconds: float = STUCK_AFTER_SECONDS,
    stuck_max_age_seconds: float = STUCK_MAX_AGE_SECONDS,
    min_samples: int = MIN_SAMPLES,
    min_backoff_ms: float = MIN_BACKOFF_MS,
    min_gap_ms: float = MIN_GAP_MS,
    limit: int = 1000,
) -> list[dict[str, Any]]:
    """The stalls of runs started in [since, until) and the stuck traces, stuck first, then newest.

    Each item: ``trace_id``, ``run_id`` (``None`` for ``stuck``), ``span_id`` (the slow or
    retried call, the span after an idle gap or the run span for a gap at its end, the last
    span of a stuck trace), ``kind``, ``tool`` (tool name, or the model span's name),
    ``duration_ms`` (the call, the backoff, the gap, the silence), ``expected_ms`` (the
    threshold it crossed, the gap threshold, the stuck threshold; ``None`` for backoff),
    ``agent`` and ``started_at`` (the run's start; a stuck trace's last span's end).

    Example:
        >>> stalls(con, kind="slow_call", agent="order-assistant")  # doctest: +SKIP
        [{'trace_id': '…', 'run_id': '…', 'span_id': '…', 'kind': 'slow_call', 'tool': 'search',
          'duration_ms': 9120.5, 'expected_ms': 740.2}]
    """
    params = _stall_params(
        since,
        until,
        agent,
        service,
        kind,
        now,
        stuck_after_seconds,
        stuck_max_age_seconds,
        min_samples,
        min_backoff_ms,
        min_gap_ms,
    )
    return run(con, "stalls", _with_members("stalls"), {**params, "limit": max(0, min(limit, MAX_LIMIT))})


def stall_counts(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    kind: str | None = None,
    now: datetime | None = None,
    stuck_after_seconds: float = STUCK_AFTER_SECONDS,
    stuck_max_age_seconds: float = STUCK_MAX_AGE_SECONDS,
    min_samples: int = MIN_SAMPLES,
    min_backoff_ms: float = MIN_BACKOFF_MS,
    min_gap_ms: float = MIN_GAP_MS,
) -> dict[str, int]:
    """How many stalls of each kind :func:`stalls` would list without a limit (the same rules).

    Example:
        >>> stall_counts(con, agent="order-assistant")  # doctest: +SKIP
        {'idle_gap': 4, 'slow_call': 12}
    """
    params = _stall_params(
        since,
        until,
        agent,
        service,
        kind,
        now,
        stuck_after_seconds,
        stuck_max_age_seconds,
        min_samples,
        min_backoff_ms,
        min_gap_ms,
    )
    rows = run(con, "stalls_counts", _with_members("stalls_counts"), params)
    return {r["kind"]: r["stalls"] for r in rows}


def _stall_params(
    since: datetime | None,
    until: datetime | None,
    agent: str | None,
    service: str | None,
    kind: str | None,
    now: datetime | None,
    stuck_after_seconds: float,
    stuck_max_age_seconds: float,
    min_samples: int,
    min_backoff_ms: float,
    min_gap_ms: float,
) -> dict[str, Any]:
    if kind is not None and kind not in STALL_KINDS:
        raise ValueError(f"kind must be one of {', '.join(STALL_KINDS)}, not {kind!r}")
    if stuck_after_seconds <= 0 or stuck_max_age_seconds <= stuck_after_seconds:
        raise ValueError("need 0 < stuck_after_seconds < stuck_max_age_seconds")
    return {
        "since": since,
        "until": until,
        "agent": agent,
        "service": service,
        "kind": kind,
        "now": now or datetime.now(UTC).replace(tzinfo=None),
        "stuck_after_seconds": float(stuck_after_seconds),
        "stuck_max_age_seconds": float(stuck_max_age_seconds),
        "min_samples": max(1, min_samples),
        "min_backoff_ms": float(min_backoff_ms),
        "min_gap_ms": float(min_gap_ms),
    }


def time_to_first_tool(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
) -> list[dict[str, Any]]:
    """Per agent: runs with a tool call and the p50 / p95 / max time from run start to the first one.

    Example:
        >>> time_to_first_tool(con)  # doctest: +SKIP
        [{'agent': 'order-assistant', 'runs': 120, 'p50_ms': 812.0, 'p95_ms': 2210.5, 'max_ms': 9000.1}]
    """
    params = {"since": since, "until": until, "agent": agent, "service": service}
    return run(con, "stalls_first_tool", _with_members("stalls_first_tool"), params)


def _with_members(name: str) -> str:
    # The per-span stall facts of the runs in the window (the CTE ``members``): the rows of
    # stalls_members.sql the writer keeps in run_members (loopsight.analytics.derive).
    return compose(name, inline=True, members="stalls_derived")
