"""The dashboard's formatter: :mod:`loopsight.format` (the one formatter, shared with the CLI) plus
the time conversion its charts need as pandas timestamps.

Example:
    >>> from loopsight.dashboard import format as fmt
    >>> fmt.duration(818_837), fmt.to_utc("2026-01-01T23:30:00+02:00")
    ('13.6 min', Timestamp('2026-01-01 21:30:00'))
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pandas as pd

from loopsight.format import (
    AXIS_COUNT,
    AXIS_NUMBER,
    MISSING,
    count,
    delta,
    duration,
    missing,
    money,
    number,
    pct,
    ratio,
    react_config,
    seconds,
    short_id,
    text,
    timestamp,
    tokens,
    usd,
)

__all__ = [
    "AXIS_COUNT",
    "AXIS_NUMBER",
    "MISSING",
    "count",
    "delta",
    "duration",
    "missing",
    "money",
    "number",
    "pct",
    "ratio",
    "react_config",
    "seconds",
    "short_id",
    "text",
    "timestamp",
    "to_utc",
    "tokens",
    "usd",
]


def to_utc(value: Any) -> pd.Timestamp | None:
    """A string, datetime, numpy or pandas time as a naive UTC pandas timestamp (``None`` when missing or
    unreadable), for charts and frames; :func:`loopsight.format.timestamp` prints one."""
    if missing(value) or value == "":
        return None
    if isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    try:
        stamp = pd.Timestamp(value)
    except (TypeError, ValueError):
        return None
    if pd.isna(stamp):
        return None
    if stamp.tzinfo is not None:
        stamp = stamp.tz_convert(UTC).tz_localize(None)
    return stamp
