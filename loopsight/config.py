"""Settings shared by every part: flags first, then ``LOOPSIGHT_*`` variables, then built-ins.

Example:
    >>> from loopsight.config import env_str
    >>> env_str("DB", "./loopsight.duckdb")  # LOOPSIGHT_DB or the default
    './loopsight.duckdb'
"""

from __future__ import annotations

import logging
import os
import re
from importlib import metadata

DEFAULT_DB = "./loopsight.duckdb"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_HTTP_PORT = 4318
DEFAULT_GRPC_PORT = 4317
DEFAULT_DASHBOARD_PORT = 8501
DEFAULT_MAX_ATTRIBUTE_LENGTH = 8192  # characters, as the OTel SDKs count their value limit
TRUNCATION_MARKER = "…[truncated]"
"""What ends a value cut to a length limit (by the collector, and by the decorators for exception text)."""
DEFAULT_MAX_ATTRIBUTES = 256
DEFAULT_MAX_EVENTS = 128

_TRUE = {"1", "true", "yes", "on"}


def _installed_version() -> str:
    try:
        return metadata.version("loopsight")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


VERSION = _installed_version()
"""The installed distribution's version (written once, in pyproject.toml)."""


def env_str(name: str, default: str | None = None) -> str | None:
    """``LOOPSIGHT_<name>`` if set and non-empty, else ``default``."""
    value = os.environ.get(f"LOOPSIGHT_{name}")
    return value if value else default


def env_bool(name: str, default: bool = False, *, raw: bool = False) -> bool:
    """A boolean variable; ``raw=True`` reads ``name`` as-is instead of ``LOOPSIGHT_<name>``."""
    value = os.environ.get(name if raw else f"LOOPSIGHT_{name}")
    if value is None or value == "":
        return default
    return value.strip().lower() in _TRUE


def env_int(name: str, default: int) -> int:
    """An integer variable; a malformed value is logged (naming the variable) and ``default`` used:
    the instrumentation reads these inside the agent's process, which must start anyway."""
    value = os.environ.get(f"LOOPSIGHT_{name}")
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        logging.getLogger("loopsight").warning("LOOPSIGHT_%s=%r is not an integer; using %d", name, value, default)
        return default


_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d|w)")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
LONGEST_DURATION = 100 * 365 * 86400.0
"""Seconds in the longest duration anything takes (100 years: a window, a retention, a look-back)."""


class DurationTooLong(ValueError):
    """A well-formed duration over :data:`LONGEST_DURATION` (any other fault is a plain ``ValueError``)."""


def parse_duration(text: str, what: str = "") -> float:
    """``"30s"``, ``"5m"``, ``"1h30m"``, ``"250ms"``, ``"2w"`` → seconds; ``what`` names the value in
    the error (a ``ValueError``) for anything else or for more than :data:`LONGEST_DURATION`.

    Example:
        >>> parse_duration("1h30m"), parse_duration("250ms")
        (5400.0, 0.25)
        >>> parse_duration("1000000d", "window")
        Traceback (most recent call last):
        ...
        loopsight.config.DurationTooLong: window '1000000d' is longer than 100 years
    """
    cleaned = text.strip().lower() if isinstance(text, str) else ""
    named = f"{what} {text!r}" if what else repr(text)
    if not cleaned or _DURATION_PART.sub("", cleaned):
        raise ValueError(f'{named} is not a duration like "30s", "5m", "1h" or "7d"')
    seconds = sum(float(n) * _DURATION_UNITS[u] for n, u in _DURATION_PART.findall(cleaned))
    if seconds > LONGEST_DURATION:
        raise DurationTooLong(f"{named} is longer than 100 years")
    return seconds


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL of a collector's base URL; a URL already ending in ``/v1/traces`` is kept.

    Example:
        >>> traces_url("http://127.0.0.1:4318/"), traces_url("http://127.0.0.1:4318/v1/traces")
        ('http://127.0.0.1:4318/v1/traces', 'http://127.0.0.1:4318/v1/traces')
    """
    endpoint = endpoint.strip().rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else f"{endpoint}/v1/traces"


def host_port(host: str, port: int | None) -> str:
    """``host:port`` as a URL writes it: an IPv6 address in brackets; the host alone without a port.

    Example:
        >>> host_port("127.0.0.1", 4318), host_port("::1", 4317), host_port("::1", None)
        ('127.0.0.1:4318', '[::1]:4317', '[::1]')
    """
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return host if port is None else f"{host}:{port}"
