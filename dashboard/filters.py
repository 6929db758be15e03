"""The filters every page shares (time range, service, agent), kept in the URL.

A shared link (``?range=1h&agent=order-assistant``) opens with the same filters; changing
a filter rewrites the URL, and switching pages keeps them.

Example:
    >>> Filters("1h", None, "order-assistant").params(now=datetime(2026, 1, 1, 12))
    {'since': datetime.datetime(2026, 1, 1, 11, 0), 'agent': 'order-assistant', 'service': None}
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import streamlit as st

RANGES: dict[str, int | None] = {
    "15m": 900,
    "1h": 3600,
    "6h": 6 * 3600,
    "24h": 86400,
    "7d": 7 * 86400,
    "30d": 30 * 86400,
    "all": None,
}
RANGE_LABELS = {
    "15m": "last 15 minutes",
    "1h": "last hour",
    "6h": "last 6 hours",
    "24h": "last 24 hours",
    "7d": "last 7 days",
    "30d": "last 30 days",
    "all": "all time",
}
DEFAULT_RANGE = "24h"
# Time buckets of the charts over time: the first giving at most MAX_BARS bars over the window.
BUCKET_LADDER = (30, 60, 120, 300, 600, 1800, 3600, 2 * 3600, 4 * 3600, 12 * 3600, 86400, 7 * 86400)
MAX_BARS = 50
ALL = "(all)"
# Rounding "now" lets cached answers be reused across reruns for a few seconds.
ROUND_SECONDS = 10


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


@dataclass(frozen=True)
class Filters:
    """The shared filters; :meth:`params` gives the ``since``/``agent``/``service`` arguments."""

    range: str = DEFAULT_RANGE
    service: str | None = None
    agent: str | None = None

    @property
    def seconds(self) -> int | None:
        return RANGES.get(self.range)

    def since(self, now: datetime | None = None) -> datetime | None:
        if self.seconds is None:
            return None
        now = now or utcnow()
        now = now - timedelta(seconds=now.second % ROUND_SECONDS, microseconds=now.microsecond)
        return now - timedelta(seconds=self.seconds)

    @property
    def bucket_seconds(self) -> int:
        """The time bucket of this range's charts (a day for all time)."""
        return bucket_seconds(self.seconds) if self.seconds else 86400

    def params(self, now: datetime | None = None) -> dict[str, Any]:
        return {"since": self.since(now), "agent": self.agent, "service": self.service}


def bucket_seconds(window_seconds: float) -> int:
    """The time bucket of a chart over ``window_seconds``: 30-50 bars over each range.

    Example:
        >>> [bucket_seconds(RANGES[r]) for r in ("15m", "1h", "6h", "24h", "7d", "30d")]
        [30, 120, 600, 1800, 14400, 86400]
    """
    return next((b for b in BUCKET_LADDER if window_seconds / b <= MAX_BARS), BUCKET_LADDER[-1])


def _options(values: set[str], current: str | None) -> list[str]:
    return [ALL, *sorted(values | ({current} if current else set()))]


def shared_filters(agents: set[str], services: set[str]) -> Filters:
    """Render the sidebar filters (initialised from the URL) and write them back to the URL."""
    qp = st.query_params
    state = st.session_state
    if "f_range" not in state:
        state["f_range"] = qp.get("range") if qp.get("range") in RANGES else DEFAULT_RANGE
    if "f_service" not in state:
        state["f_service"] = qp.get("service") or ALL
    if "f_agent" not in state:
        state["f_agent"] = qp.get("agent") or ALL
    with st.sidebar:
        st.selectbox("Time range", list(RANGES), key="f_range", format_func=lambda key: RANGE_LABELS.get(key, key))
        st.selectbox("Service", _options(services, _value(state["f_service"])), key="f_service")
        st.selectbox("Agent", _options(agents, _value(state["f_agent"])), key="f_agent")
    filters = Filters(state["f_range"], _value(state["f_service"]), _value(state["f_agent"]))
    for name, value, default in (
        ("range", filters.range, DEFAULT_RANGE),
        ("service", filters.service, None),
        ("agent", filters.agent, None),
    ):
        if value == default:
            if name in qp:
                del qp[name]
        elif value is not None and qp.get(name) != value:
            qp[name] = value
    state["filters"] = filters
    return filters


def current() -> Filters:
    """The filters the app rendered in this run (defaults if none yet)."""
    return st.session_state.get("filters", Filters())


def _value(option: str | None) -> str | None:
    return None if option in (None, "", ALL) else option
