"""The one formatter: every number, duration, token count, amount, share and time loopsight shows
(the dashboard, the CLI's tables, ``alerts check``).

Missing values (``None``, NaN, NaT, ``pd.NA``) print as an em dash, never "None" or "nan".
Durations pick their unit by size (ms, s, min, h), so a stuck run reads "13.4 min", not
"818837 ms"; times are UTC on a 24 h clock and say so.

Example:
    >>> number(1518), tokens(1518), tokens(1518, compact=True), duration(818_837), pct(0.1234)
    ('1,518', '1,518', '1.5 k', '13.6 min', '12.3%')
    >>> usd(4.2), usd(0.004), usd(None), timestamp("2026-01-01T22:05:09.5Z")
    ('$4.20', '<$0.01', '—', '2026-01-01 22:05:09 UTC')
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from typing import Any

MISSING = "—"
# The unit ladder of durations: (unit, milliseconds in it, decimals shown).
_DURATION_UNITS = (("s", 1000.0, 2), ("s", 1000.0, 1), ("min", 60_000.0, 1), ("h", 3_600_000.0, 1))
# Under this many of a unit, one more decimal (2.41 s, but 30.0 s).
_FINE_BELOW = 10


def missing(value: Any) -> bool:
    """``True`` for ``None``, NaN, NaT and ``pd.NA`` (lists and dicts are values, never missing).

    Example:
        >>> [missing(v) for v in (None, float("nan"), 0, "", [])]
        [True, True, False, False, False]
    """
    if value is None:
        return True
    if isinstance(value, (list, tuple, dict, set, str, int)):
        return False
    try:
        return bool(value != value)  # NaN and NaT are not themselves
    except (TypeError, ValueError):
        return True  # pandas' NA has no truth value


def number(value: Any, decimals: int = 0) -> str:
    """A number with thousands separators and ``decimals`` decimals.

    Example:
        >>> number(1234567), number(0.25, 2), number(None), number(-3.5, 1)
        ('1,234,567', '0.25', '—', '-3.5')
    """
    if missing(value):
        return MISSING
    try:
        return f"{float(value):,.{decimals}f}"
    except (TypeError, ValueError):
        return str(value)


def figure(value: Any) -> str:
    """A measured figure of any size: whole numbers with separators, fractions to 3 significant digits.

    Example:
        >>> figure(12000), figure(2.5), figure(0.08), figure(1234.5), figure(None)
        ('12,000', '2.5', '0.08', '1,234', '—')
    """
    if missing(value):
        return MISSING
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return number(value)


def count(value: Any) -> str:
    """A whole count with thousands separators (``12,345``)."""
    return number(value, 0)


def tokens(value: Any, compact: bool = False) -> str:
    """Tokens: ``1,518`` in tables and tooltips; ``compact`` for tiles and bar labels (``1.5 k``, ``2.3 M``).

    Example:
        >>> [tokens(v, compact=True) for v in (950, 1518, 15_180, 151_800, 2_345_678)]
        ['950', '1.5 k', '15.2 k', '152 k', '2.3 M']
    """
    if missing(value):
        return MISSING
    amount = float(value)
    if not compact or abs(amount) < 999.5:
        return number(amount)
    unit, scale = ("M", 1e6) if abs(amount) >= 999_500 else ("k", 1e3)
    scaled = amount / scale
    return f"{scaled:,.0f} {unit}" if abs(scaled) >= 99.95 else f"{scaled:.1f} {unit}"


def duration(ms: Any) -> str:
    """Milliseconds as people read them: the unit by size, never "818837 ms".

    Example:
        >>> [duration(v) for v in (0.042, 3.25, 412, 999.7, 2410, 30_000, 59_999, 668_101.671, 7_200_000, None)]
        ['0.04 ms', '3.2 ms', '412 ms', '1.00 s', '2.41 s', '30.0 s', '1.0 min', '11.1 min', '2.0 h', '—']
    """
    if missing(ms):
        return MISSING
    value = float(ms)
    size = abs(value)
    if size == 0:
        return "0 ms"
    if round(size, 1) < 10:
        return f"{value:.2f} ms" if size < 1 else f"{value:.1f} ms"
    if round(size) < 1000:
        return f"{value:.0f} ms"
    for i, (unit, scale, decimals) in enumerate(_DURATION_UNITS):
        shown = round(size / scale, decimals)
        following = _DURATION_UNITS[i + 1] if i + 1 < len(_DURATION_UNITS) else None
        upper = math.inf if following is None else following[1] / scale
        if following is not None and following[0] == unit:
            upper = _FINE_BELOW
        if shown < upper:
            return f"{value / scale:,.{decimals}f} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def seconds(value: Any) -> str:
    """An interval in seconds, as settings and budgets name it, never rounded (to the millisecond):
    ``30 s``, ``0.12 s``, ``1 min``, ``1.5 min``, ``95 s``, ``2 h``. A larger unit only when it says
    the value exactly (a budget shown rounded down would cut the runs between).

    Example:
        >>> [seconds(v) for v in (1, 30, 60, 90, 95, 300, 7200, 0.12, 0.04, 0.001, None)]
        ['1 s', '30 s', '1 min', '1.5 min', '95 s', '5 min', '2 h', '0.12 s', '0.04 s', '0.001 s', '—']
    """
    if missing(value):
        return MISSING
    amount = round(float(value), 3)
    for unit, size in (("h", 3600), ("min", 60)):
        shown = round(amount / size, 1)
        if amount >= size and round(shown * size, 3) == amount:
            return f"{shown:,.1f}".removesuffix(".0") + f" {unit}"
    return f"{amount:,.3f}".rstrip("0").removesuffix(".") + " s"


def pct(value: Any, decimals: int = 1) -> str:
    """A fraction as a percentage (``0.1234`` -> ``12.3%``); a non-zero share too small to show is ``<0.1%``.

    Example:
        >>> pct(0.1234), pct(1), pct(0), pct(0.00001), pct(None)
        ('12.3%', '100.0%', '0.0%', '<0.1%', '—')
    """
    if missing(value):
        return MISSING
    share = 100 * float(value)
    smallest = 10**-decimals
    if 0 < share < smallest / 2:
        return f"<{smallest:.{decimals}f}%"
    return f"{share:.{decimals}f}%"


def usd(value: Any, precise: bool = False) -> str:
    """US dollars: ``$4.20``, ``$1,234.50``, ``<$0.01`` for a cost too small to show; unpriced is a dash, never $0.

    ``precise`` shows amounts under a dollar to four decimals (one run, one call: ``$0.0042``).

    Example:
        >>> usd(4.2), usd(1234.5), usd(0.001), usd(0), usd(None), usd(0.00123, precise=True), usd(-0.00001, precise=True)
        ('$4.20', '$1,234.50', '<$0.01', '$0.00', '—', '$0.0012', '-<$0.0001')
    """
    if missing(value):
        return MISSING
    amount = float(value) + 0.0  # -0.0 (a sum that cancels out, rounded) is $0.00
    if amount < 0:
        return "-" + usd(-amount, precise=precise)
    if precise and 0 < amount < 1:
        return f"${amount:.4f}" if amount >= 0.00005 else "<$0.0001"
    if 0 < amount < 0.005:
        return "<$0.01"
    return f"${amount:,.2f}"


def money(value: Any, unpriced_calls: Any = 0, precise: bool = False) -> str:
    """A cost as :func:`usd` shows it, ``unpriced`` when none of its model calls has a price but some
    were made (never $0); a dash when there was nothing to price (no model call with tokens).

    Example:
        >>> money(0.0042, 0, precise=True), money(None, 2), money(None, 0), money(None)
        ('$0.0042', 'unpriced', '—', '—')
    """
    if missing(value) and not missing(unpriced_calls) and unpriced_calls:
        return "unpriced"
    return usd(value, precise=precise)


def react_config(budgets: Any) -> str | None:
    """``ReactConfig(max_steps=6, ...)`` of the recommended values of ``/api/v1/budgets`` budgets (their
    ``react_field`` and ``recommended``), as Python to paste: whole values as integers (``1200000``,
    never ``1.2e+06``); ``None`` when nothing is recommended.

    Example:
        >>> react_config([{"react_field": "max_tokens", "recommended": 1200000},
        ...               {"react_field": "max_seconds", "recommended": 0.08},
        ...               {"react_field": "max_steps", "recommended": None}])
        'ReactConfig(max_tokens=1200000, max_seconds=0.08)'
    """
    fields = []
    for budget in budgets:
        value = budget.get("recommended")
        if budget.get("react_field") and not missing(value):
            amount = float(value)
            fields.append(f"{budget['react_field']}={int(amount) if amount.is_integer() else amount!r}")
    return f"ReactConfig({', '.join(fields)})" if fields else None


def ratio(value: Any, decimals: int = 1) -> str:
    """A multiple (``3.25`` -> ``3.2×``)."""
    return MISSING if missing(value) else f"{float(value):,.{decimals}f}×"


def to_utc(value: Any) -> datetime | None:
    """An ISO-8601 string, date or datetime as a naive UTC datetime (``None`` when missing or unreadable).

    Example:
        >>> to_utc("2026-01-01T23:30:00+02:00")
        datetime.datetime(2026, 1, 1, 21, 30)
    """
    if missing(value) or value == "":
        return None
    if isinstance(value, date) and not isinstance(value, datetime):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    if not isinstance(value, datetime):  # a pandas Timestamp is a datetime
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def timestamp(value: Any, *, label: bool = True, seconds: bool = True) -> str:
    """A time as ``YYYY-MM-DD HH:MM:SS UTC`` (24 h clock); ``label=False`` leaves "UTC" to a column header.

    Example:
        >>> timestamp("2026-01-01T22:05:09.5Z"), timestamp(None), timestamp("2026-01-01 07:00", label=False, seconds=False)
        ('2026-01-01 22:05:09 UTC', '—', '2026-01-01 07:00')
    """
    stamp = to_utc(value)
    if stamp is None:
        return MISSING
    text = stamp.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")
    return f"{text} UTC" if label else text


def short_id(value: Any, length: int = 12) -> str:
    """The first ``length`` characters of an id (the full id stays in links and tooltips)."""
    return MISSING if missing(value) else str(value)[:length]


def text(value: Any) -> str:
    """Any cell as text: numbers with separators (floats to 4 significant digits), lists and dicts as written,
    missing values as an em dash.

    Example:
        >>> [text(v) for v in (None, 1518, 0.13333, 2.0, "ok", [1, 2], True, 1e308)]
        ['—', '1,518', '0.1333', '2', 'ok', '[1, 2]', 'True', '1e+308']
    """
    if isinstance(value, (list, tuple, dict)):
        return str(value)
    if missing(value):
        return MISSING
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if abs(value) >= 1e15:  # a threshold of 1e308 is not three hundred digits
            return f"{value:.4g}"
        if value.is_integer():
            return f"{int(value):,}"
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, datetime):
        return timestamp(value, label=False)
    return str(value)


def delta(value: Any, kind: str) -> str | None:
    """A tile's change against the previous window: ``+2.1 pts`` for rates, ``+1.2 s`` for durations, ``+40`` for counts."""
    if missing(value):
        return None
    change = float(value)
    if kind == "rate":
        return f"{100 * change:+.1f} pts"
    if kind == "ms":
        return ("+" if change >= 0 else "-") + duration(abs(change))
    return f"{change:+,.0f}"


# d3 formats for chart axes (Vega reads them): whole numbers with separators, never 0.5 ticks.
AXIS_COUNT = ",d"
AXIS_NUMBER = ",.0f"
