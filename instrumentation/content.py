"""Opt-in capture of arguments, results and messages, truncated and redacted.

Nothing is recorded unless ``LOOPSIGHT_CAPTURE_CONTENT`` or the OpenTelemetry
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is true (or
``configure(capture_content=True)``). Captured text is redacted (API keys, bearer
tokens, emails, card numbers, plus user patterns) and cut to a length limit
(``LOOPSIGHT_CONTENT_MAX_LENGTH``, default 4096 characters).

Example:
    >>> redact("key sk-abcdefghijklmnop1234 mail bob@example.com")
    'key [REDACTED:api_key] mail [REDACTED:email]'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from loopsight.config import env_bool, env_int
from loopsight.hashing import canonical_json
from loopsight.redaction import add_patterns, redact_head
from loopsight.redaction import redact as redact  # used from here by handles and loopsight.instrumentation

DEFAULT_MAX_LENGTH = 4096


class _ContentSettings:
    __slots__ = ("enabled", "max_length")

    def __init__(self) -> None:
        self.enabled: bool = False
        self.max_length: int = DEFAULT_MAX_LENGTH
        self.reload()

    def reload(self) -> None:
        self.enabled = env_bool("CAPTURE_CONTENT") or env_bool(
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raw=True
        )
        self.max_length = max(0, env_int("CONTENT_MAX_LENGTH", DEFAULT_MAX_LENGTH))


SETTINGS = _ContentSettings()


def set_capture(
    enabled: bool | None = None,
    *,
    max_length: int | None = None,
    redact_patterns: Iterable[str | re.Pattern[str]] | None = None,
) -> None:
    """Change capture settings at run time (``configure()`` calls this).

    Example:
        >>> set_capture(redact_patterns=[r"ORDER-\\d+"])
        >>> redact("see ORDER-1234")
        'see [REDACTED]'
        >>> from loopsight.redaction import USER_PATTERNS; USER_PATTERNS.clear()
    """
    if enabled is not None:
        SETTINGS.enabled = bool(enabled)
    if max_length is not None:
        if max_length < 0:
            raise ValueError(f"max_length must be >= 0, got {max_length}")
        SETTINGS.max_length = max_length
    add_patterns(redact_patterns or ())


def capture_enabled() -> bool:
    """Whether content is recorded right now."""
    return SETTINGS.enabled


def render(value: Any) -> str:
    """Text for a captured value: strings as they are, anything else as canonical JSON, cut to
    the length limit and redacted, in that order: only the kept head and a margin past it are
    read (a ``…[truncated N chars]`` suffix says how much was cut).

    Example:
        >>> render({"q": "key sk-abcdefghijklmnop1234"})
        '{"q":"key [REDACTED:api_key]"}'
    """
    text = value if isinstance(value, str) else canonical_json(value)
    text, cut = redact_head(text, SETTINGS.max_length)
    return f"{text}…[truncated {cut} chars]" if cut else text
