"""Termination reasons over time: run counts and each reason's share per time bucket.

Example:
    >>> terminations(con, bucket_seconds=3600, since=datetime(2026, 1, 1))  # doctest: +SKIP
    {'bucket_seconds': 3600,
     'terminations': [{'bucket': '2026-01-01T00:00:00.000000Z', 'termination_reason': 'completed',
                       'runs': 41, 'ok': 41, 'rate': 0.82}, ...],
     'totals': [{'termination_reason': 'completed', 'runs': 410, 'ok': 409, 'rate': 0.8}, ...]}
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from loopsight.analytics.runs import run_filters
from loopsight.analytics.sql import Connection, query

MIN_BUCKET_SECONDS = 1
MAX_BUCKET_SECONDS = 366 * 86400
MAX_BUCKETS = 10_000
_NICE_BUCKETS = (60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 7 * 86400)


def auto_bucket_seconds(since: datetime | None, until: datetime | None, target: int = 60) -> int:
    """The smallest round bucket giving at most ``target`` buckets over the window (1 h if open).

    Example:
        >>> auto_bucket_seconds(datetime(2026, 1, 1), datetime(2026, 1, 2))
        1800
    """
    if since is None or until is None or until <= since:
        return 3600
    span = (until - since).total_seconds()
    for seconds in _NICE_BUCKETS:
        if span / seconds <= target:
            return seconds
    return _NICE_BUCKETS[-1]


def terminations(
    con: Connection,
    *,
    bucket_seconds: int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    status: str | None = None,
    termination_reason: str | None = None,
    tool: str | None = None,
    min_tokens: int | None = None,
    session: str | None = None,
    q: str | None = None,
) -> dict[str, Any]:
    """Runs per bucket and termination reason (long form, ready for a stacked chart), over the runs
    the filters of :func:`loopsight.analytics.runs.list_runs` keep.

    ``terminations`` rows are ``{"bucket", "termination_reason", "runs", "ok", "rate"}``
    where ``rate`` is the reason's share of the bucket's runs and ``ok`` counts runs with
    status ok; ``totals`` are the same over the whole window (``rate`` of all runs).
    Buckets start at multiples of ``bucket_seconds`` since the Unix epoch (UTC); without
    one, a round size giving about 60 buckets over the window is chosen.
    Raises ``ValueError`` for a bucket out of range or a window of more than 10,000 buckets.

    Example:
        >>> terminations(con, bucket_seconds=86400)["totals"][0]["termination_reason"]  # doctest: +SKIP
        'completed'
    """
    if bucket_seconds is None:  # a window with a start and no end ends now
        end = until if until is not None or since is None else datetime.now(UTC).replace(tzinfo=None)
        bucket_seconds = auto_bucket_seconds(since, end)
    if not MIN_BUCKET_SECONDS <= bucket_seconds <= MAX_BUCKET_SECONDS:
        raise ValueError(f"bucket of {bucket_seconds} s is out of range [{MIN_BUCKET_SECONDS}, {MAX_BUCKET_SECONDS}]")
    # an open end is not bounded here: the buckets are those the stored runs fall in
    if since is not None and until is not None and (until - since).total_seconds() / bucket_seconds > MAX_BUCKETS:
        raise ValueError(f"the window holds more than {MAX_BUCKETS} buckets of {bucket_seconds} s: use a larger bucket")
    filters = run_filters(
        con, agent, service, status, termination_reason, since, until, None, tool, min_tokens, None, session, q
    )
    rows = query(con, "terminations", bucket_seconds=bucket_seconds, **filters)
    totals: dict[str, dict[str, Any]] = {}
    for row in rows:
        total = totals.setdefault(
            row["termination_reason"], {"termination_reason": row["termination_reason"], "runs": 0, "ok": 0}
        )
        total["runs"] += row["runs"]
        total["ok"] += row["ok"]
    all_runs = sum(t["runs"] for t in totals.values())
    ranked = sorted(totals.values(), key=lambda t: (-t["runs"], t["termination_reason"]))
    for total in ranked:
        total["rate"] = total["runs"] / all_runs
    return {"bucket_seconds": bucket_seconds, "terminations": rows, "totals": ranked}
