"""The filters every page shares (time range, service, agent, auto-refresh), kept in the URL.

A shared link (``?range=1h&agent=order-assistant``, or an absolute window
``?range=custom&from=2026-01-01T08:00Z&to=2026-01-01T12:00Z``, in UTC) opens with the same
filters; changing a filter rewrites the URL, and switching pages keeps them.

Example:
    >>> Filters("1h", None, "order-assistant").params(now=datetime(2026, 1, 1, 12))
    {'since': datetime.datetime(2026, 1, 1, 11, 0), 'until': None, 'agent': 'order-assistant', 'service': None}
    >>> Filters("custom", start=datetime(2026, 1, 1, 8), end=datetime(2026, 1, 1, 12)).window()
    (datetime.datetime(2026, 1, 1, 8, 0), datetime.datetime(2026, 1, 1, 12, 0))
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

import streamlit as st

from loopsight.dashboard import format as fmt

RANGES: dict[str, int | None] = {
    "15m": 900,
    "1h": 3600,
    "6h": 6 * 3600,
    "24h": 86400,
    "7d": 7 * 86400,
    "30d": 30 * 86400,
    "all": None,
    "custom": None,
}
RANGE_LABELS = {
    "15m": "last 15 minutes",
    "1h": "last hour",
    "6h": "last 6 hours",
    "24h": "last 24 hours",
    "7d": "last 7 days",
    "30d": "last 30 days",
    "all": "all time",
    "custom": "custom range (UTC)",
}
DEFAULT_RANGE = "24h"
# Time buckets of the charts over time: the first giving at most MAX_BARS bars over the window.
BUCKET_LADDER = (1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 2 * 3600, 4 * 3600, 12 * 3600, 86400, 7 * 86400)
MAX_BARS = 50
ALL = "(all)"
# Rounding "now" lets cached answers be reused across reruns for a few seconds.
ROUND_SECONDS = 10
REFRESH_CHOICES = (10, 30, 60, 300)
DEFAULT_REFRESH = 30


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _rounded(now: datetime) -> datetime:
    return now - timedelta(seconds=now.second % ROUND_SECONDS, microseconds=now.microsecond)


@dataclass(frozen=True)
class Filters:
    """The shared filters; :meth:`params` gives the ``since``/``until``/``agent``/``service`` arguments.

    ``start``/``end`` (naive UTC) hold the absolute window of the ``custom`` range; ``refresh``
    is the auto-refresh interval in seconds (``None``: off).
    """

    range: str = DEFAULT_RANGE
    service: str | None = None
    agent: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    refresh: int | None = DEFAULT_REFRESH

    @property
    def custom(self) -> bool:
        return self.range == "custom" and self.start is not None and self.end is not None

    @property
    def seconds(self) -> float | None:
        if self.custom:
            assert self.start is not None and self.end is not None
            return (self.end - self.start).total_seconds()
        return RANGES.get(self.range)

    def since(self, now: datetime | None = None) -> datetime | None:
        if self.custom:
            return self.start
        seconds = RANGES.get(self.range)
        if seconds is None:
            return None
        return _rounded(now or utcnow()) - timedelta(seconds=seconds)

    def until(self) -> datetime | None:
        """The end of an absolute window; ``None`` (now) for the ranges that end now."""
        return self.end if self.custom else None

    def window(self, now: datetime | None = None) -> tuple[datetime | None, datetime]:
        """``(start, end)`` of the window shown: start ``None`` for all time, end now unless absolute."""
        return self.since(now), self.until() or _rounded(now or utcnow()) + timedelta(seconds=ROUND_SECONDS)

    @property
    def bucket_seconds(self) -> int:
        """The time bucket of this range's charts (a day for all time)."""
        return bucket_seconds(self.seconds) if self.seconds else 86400

    def params(self, now: datetime | None = None) -> dict[str, Any]:
        return {"since": self.since(now), "until": self.until(), "agent": self.agent, "service": self.service}

    def label(self) -> str:
        """The window in words: ``last 24 hours``, or ``2026-01-01 08:00 – 12:00 UTC``."""
        if not self.custom:
            return RANGE_LABELS.get(self.range, self.range)
        start, end = fmt.timestamp(self.start, label=False, seconds=False), fmt.timestamp(self.end, seconds=False)
        if start[:10] == end[:10]:
            end = end[11:]
        return f"{start} – {end}"


def bucket_seconds(window_seconds: float) -> int:
    """The time bucket of a chart over ``window_seconds``: 20-50 bars over each range.

    Example:
        >>> [bucket_seconds(RANGES[r]) for r in ("15m", "1h", "6h", "24h", "7d", "30d")]
        [30, 120, 600, 1800, 14400, 86400]
    """
    return next((b for b in BUCKET_LADDER if window_seconds / b <= MAX_BARS), BUCKET_LADDER[-1])


def _options(values: set[str], current: str | None) -> list[str]:
    return [ALL, *sorted(values | ({current} if current else set()))]


def parse_utc(text: str | None) -> datetime | None:
    """A ``from``/``to`` URL value (ISO-8601, ``Z`` or an offset allowed) as naive UTC; ``None`` if unreadable.

    Example:
        >>> parse_utc("2026-01-01T08:00Z"), parse_utc("yesterday")
        (datetime.datetime(2026, 1, 1, 8, 0), None)
    """
    stamp = fmt.to_utc(text) if text else None
    return None if stamp is None else stamp.to_pydatetime()


def _url_time(value: datetime) -> str:
    """The link's form of a window end: minutes, or seconds when a link gave them (the same view again).

    Example:
        >>> _url_time(datetime(2026, 12, 6, 2, 12)), _url_time(datetime(2026, 12, 6, 2, 12, 40))
        ('2026-12-06T02:12Z', '2026-12-06T02:12:40Z')
    """
    return value.strftime("%Y-%m-%dT%H:%M:%SZ" if value.second else "%Y-%m-%dT%H:%MZ")


def _custom_window(state: Any) -> tuple[datetime, datetime]:
    """The start/end pickers (UTC) of the custom range, initialised from the URL or the last 24 hours."""
    qp = st.query_params
    if "f_from_date" not in state:
        now = _rounded(utcnow()).replace(second=0)
        start = parse_utc(qp.get("from")) or now - timedelta(days=1)
        end = parse_utc(qp.get("to")) or now
        state["f_from_date"], state["f_from_time"] = start.date(), start.time()
        state["f_to_date"], state["f_to_time"] = end.date(), end.time()
    left, right = st.columns(2)
    left.date_input("From (UTC)", key="f_from_date", format="YYYY-MM-DD")
    right.time_input("at", key="f_from_time", step=timedelta(minutes=15))
    left, right = st.columns(2)
    left.date_input("To (UTC)", key="f_to_date", format="YYYY-MM-DD")
    right.time_input("at ", key="f_to_time", step=timedelta(minutes=15))
    start = datetime.combine(state["f_from_date"], state["f_from_time"] or time())
    end = datetime.combine(state["f_to_date"], state["f_to_time"] or time())
    if end <= start:
        st.caption("The end is before the start: showing the hour after the start.")
        end = start + timedelta(hours=1)
    return start, end


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
    if "f_refresh" not in state:
        state["f_refresh"] = qp.get("refresh") != "off"
    start = end = None
    with st.sidebar:
        st.selectbox("Time range", list(RANGES), key="f_range", format_func=lambda key: RANGE_LABELS.get(key, key))
        if state["f_range"] == "custom":
            start, end = _custom_window(state)
        st.selectbox("Service", _options(services, _value(state["f_service"])), key="f_service")
        st.selectbox("Agent", _options(agents, _value(state["f_agent"])), key="f_agent")
        refresh_col, every_col = st.columns([3, 2], vertical_alignment="center")
        refresh_col.toggle("Auto-refresh", key="f_refresh", help="Reload this page's data while you watch it.")
        every = every_col.selectbox(
            "every",
            REFRESH_CHOICES,
            index=REFRESH_CHOICES.index(DEFAULT_REFRESH),
            key="f_refresh_every",
            format_func=fmt.seconds,
            label_visibility="collapsed",
            disabled=not state["f_refresh"],
        )
    filters = Filters(
        state["f_range"],
        _value(state["f_service"]),
        _value(state["f_agent"]),
        start,
        end,
        int(every) if state["f_refresh"] else None,
    )
    for name, value, default in (
        ("range", filters.range, DEFAULT_RANGE),
        ("from", _url_time(start) if start else None, None),
        ("to", _url_time(end) if end else None, None),
        ("service", filters.service, None),
        ("agent", filters.agent, None),
        ("refresh", None if filters.refresh else "off", None),
    ):
        if value == default:
            if name in qp:
                del qp[name]
        elif value is not None and qp.get(name) != value:
            qp[name] = value
    state["filters"] = filters
    return filters


def from_url() -> Filters:
    """The filters a link asks for, before the sidebar has rendered them (the first run of a session)."""
    qp = st.query_params
    wanted = qp.get("range") if qp.get("range") in RANGES else DEFAULT_RANGE
    start, end = parse_utc(qp.get("from")), parse_utc(qp.get("to"))
    return Filters(wanted or DEFAULT_RANGE, qp.get("service") or None, qp.get("agent") or None, start, end)


def pending() -> Filters:
    """The filters this run will render, read before the sidebar draws them (its widgets' state is
    already the user's latest choice), else those of the link: what a page may ask for early."""
    state = st.session_state
    if "f_range" not in state:
        return from_url()
    start = end = None
    if state["f_range"] == "custom" and "f_from_date" in state:
        start = datetime.combine(state["f_from_date"], state.get("f_from_time") or time())
        end = datetime.combine(state["f_to_date"], state.get("f_to_time") or time())
        end = end if end > start else start + timedelta(hours=1)
    return Filters(state["f_range"], _value(state.get("f_service")), _value(state.get("f_agent")), start, end)


def current() -> Filters:
    """The filters the app rendered in this run (defaults if none yet)."""
    return st.session_state.get("filters", Filters())


def _value(option: str | None) -> str | None:
    return None if option in (None, "", ALL) else option
