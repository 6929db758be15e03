"""Argument checks for loopsight's public API: one helper per kind of value.

The decorators, handles, ``configure()`` and the ReAct loop's settings check what they are given
when they are created or called, so a wrong argument is a ``TypeError`` / ``ValueError`` naming
the parameter there, never a silently wrong span or a failure on every later call. Each helper
returns the value (an int as an ``int``, a number as a ``float``); ``None`` passes only where the
parameter is optional.

Example:
    >>> positive_int("max_steps", 10)
    10
    >>> positive_int("max_steps", True)
    Traceback (most recent call last):
    ...
    TypeError: max_steps must be an integer, got True
    >>> positive_number("max_seconds", float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: max_seconds must be a finite number > 0, got nan
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Collection
from typing import Any, TypeVar

T = TypeVar("T")


def _int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):  # numpy's ints too
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return int(value)


def positive_int(name: str, value: Any, *, optional: bool = False) -> Any:
    """``value`` as an int >= 1 (``bool`` is not an int here); ``None`` only when ``optional``."""
    if value is None and optional:
        return None
    if _int(name, value) < 1:
        raise ValueError(f"{name} must be >= 1, got {value!r}")
    return int(value)


def non_negative_int(name: str, value: Any, *, optional: bool = False) -> Any:
    """``value`` as an int >= 0; ``None`` only when ``optional``."""
    if value is None and optional:
        return None
    if _int(name, value) < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return int(value)


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    return float(value)


def positive_number(name: str, value: Any, *, optional: bool = False) -> Any:
    """``value`` as a finite float > 0 (seconds, shares); ``None`` only when ``optional``."""
    if value is None and optional:
        return None
    number = _number(name, value)
    if not (math.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return number


def non_negative_number(name: str, value: Any, *, optional: bool = False) -> Any:
    """``value`` as a finite float >= 0; ``None`` only when ``optional``."""
    if value is None and optional:
        return None
    number = _number(name, value)
    if not (math.isfinite(number) and number >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return number


def text(name: str, value: Any, *, optional: bool = False, empty: bool = True) -> Any:
    """``value`` as a ``str`` (non-empty unless ``empty``); ``None`` only when ``optional``."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {value!r}")
    if not empty and not value.strip():
        raise ValueError(f"{name} must be a non-empty str, got {value!r}")
    return value


def flag(name: str, value: Any, *, optional: bool = False) -> Any:
    """``value`` as a ``bool`` (``"no"``, ``0`` and ``1`` are refused); ``None`` only when ``optional``."""
    if value is None and optional:
        return None
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def function(name: str, value: T, *, optional: bool = False) -> T:
    """``value``, which must be callable; ``None`` only when ``optional``."""
    if value is None and optional:
        return value
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {value!r}")
    return value


def one_of(name: str, value: Any, allowed: Collection[str], *, optional: bool = False) -> Any:
    """``value``, which must be one of ``allowed`` (the message lists them)."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def instance(name: str, value: Any, kind: type | tuple[type, ...], *, hint: str = "", optional: bool = False) -> Any:
    """``value``, which must be an instance of ``kind`` (``hint`` completes the message)."""
    if value is None and optional:
        return None
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise TypeError(f"{name} must be a {names}{hint}, got {value!r}")
    return value


def has_methods(name: str, value: Any, methods: tuple[str, ...], what: str, *, optional: bool = False) -> Any:
    """``value``, which must have callable ``methods`` (a duck-typed interface: ``what`` names it)."""
    if value is None and optional:
        return None
    missing = [m for m in methods if not callable(getattr(value, m, None))]
    if missing:
        raise TypeError(f"{name} must be {what} (with {', '.join(methods)}), got {value!r}")
    return value


def each(name: str, values: Any, check: Callable[[str, Any], Any]) -> list[Any]:
    """A list (or tuple, ...) whose items each pass ``check``; a lone ``str`` is refused."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a list, got {values!r}")
    return [check(f"{name}[{i}]", item) for i, item in enumerate(values)]
