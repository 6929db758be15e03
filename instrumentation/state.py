"""Process-wide instrumentation state: the tracer in use, the clock, the off switch.

Kept in one small object so the hot path reads a couple of attributes and nothing else.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from opentelemetry import trace

from loopsight.config import VERSION, env_bool

logger = logging.getLogger("loopsight")

_TRACER_NAME = "loopsight"


class _State:
    __slots__ = ("_logged", "_tracer", "_tracer_for", "clock", "disabled", "provider")

    def __init__(self) -> None:
        self.disabled: bool = env_bool("DISABLED")
        # Set by configure() or the pytest plugin; else the global provider is used.
        self.provider: Any = None
        self.clock: Callable[[], int] = time.time_ns
        self._tracer: Any = None
        self._tracer_for: Any = None
        self._logged: set[str] = set()

    def tracer(self) -> Any:
        """The loopsight tracer, or None while no TracerProvider exists anywhere."""
        provider = self.provider
        if provider is None:
            provider = getattr(trace, "_TRACER_PROVIDER", None)
            if provider is None:
                return None
        if provider is not self._tracer_for:
            self._tracer = provider.get_tracer(_TRACER_NAME, VERSION)
            self._tracer_for = provider
        return self._tracer


STATE = _State()


def refresh_from_env() -> None:
    """Re-read ``LOOPSIGHT_DISABLED`` (it is read once at import)."""
    STATE.disabled = env_bool("DISABLED")


def internal_error(where: str, exc: BaseException) -> None:
    """Log a loopsight-internal failure once per place; never raises."""
    try:
        key = f"{where}:{type(exc).__name__}"
        if key in STATE._logged:
            return
        STATE._logged.add(key)
        logger.warning("loopsight: internal error in %s (ignored): %r", where, exc, exc_info=exc)
    except Exception:  # pragma: no cover - logging itself failed
        pass
