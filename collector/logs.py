"""Structured logs: one JSON object per line on stderr (``LOOPSIGHT_LOG_FORMAT=text`` for plain).

Fields passed with ``extra=`` become keys of the object.

Example:
    >>> import json, logging
    >>> record = logging.LogRecord("loopsight", logging.INFO, "", 0, "started", None, None)
    >>> record.db = "x.duckdb"
    >>> json.loads(JsonFormatter().format(record))["db"]
    'x.duckdb'
"""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime

_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """``{"ts": ..., "level": ..., "logger": ..., "msg": ..., **extra}``."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure_logging(level: str | None = None) -> None:
    """Send ``loopsight.*`` logs to stderr once (JSON lines unless ``LOOPSIGHT_LOG_FORMAT=text``)."""
    logger = logging.getLogger("loopsight")
    if any(getattr(h, "_loopsight", False) for h in logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler._loopsight = True  # type: ignore[attr-defined]
    if os.environ.get("LOOPSIGHT_LOG_FORMAT", "json").lower() == "text":
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(JsonFormatter())
    logger.addHandler(handler)
    logger.setLevel((level or os.environ.get("LOOPSIGHT_LOG_LEVEL", "INFO")).upper())
    logger.propagate = False
