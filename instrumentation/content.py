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

from .hashing import canonical_json

DEFAULT_MAX_LENGTH = 4096

_DEFAULT_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("bearer", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]+=*")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+")),
    (
        "api_key",
        re.compile(
            r"\b(?:sk|pk|rk)-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{16,}"  # OpenAI, Anthropic, Stripe-ish
            r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
            r"|\bgh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
            r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"  # Slack tokens
            r"|\bAIza[0-9A-Za-z_-]{35}"  # Google API keys
        ),
    ),
    # bounded (RFC 5321 lengths) so hostile text like "a.a.a..." is not quadratic
    ("email", re.compile(r"\b[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,255}\.[A-Za-z]{2,63}\b")),
]
_CARD = re.compile(r"\b\d(?:[ -]?\d){12,18}\b")


class _ContentSettings:
    __slots__ = ("enabled", "max_length", "patterns")

    def __init__(self) -> None:
        self.enabled: bool = False
        self.max_length: int = DEFAULT_MAX_LENGTH
        self.patterns: list[tuple[str, re.Pattern[str]]] = []
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
        >>> SETTINGS.patterns.clear()
    """
    if enabled is not None:
        SETTINGS.enabled = bool(enabled)
    if max_length is not None:
        if max_length < 0:
            raise ValueError(f"max_length must be >= 0, got {max_length}")
        SETTINGS.max_length = max_length
    for pattern in redact_patterns or ():
        compiled = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern)
        SETTINGS.patterns.append(("", compiled))


def capture_enabled() -> bool:
    """Whether content is recorded right now."""
    return SETTINGS.enabled


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"[ -]", "", match.group(0))
    return "[REDACTED:card]" if 13 <= len(digits) <= 19 and _luhn_ok(digits) else match.group(0)


def redact(text: str) -> str:
    """Replace secrets in ``text`` with ``[REDACTED:kind]`` markers.

    Example:
        >>> redact("Authorization: Bearer abc.def-123")
        'Authorization: [REDACTED:bearer]'
        >>> redact("card 4111 1111 1111 1111, order 1234567890123")
        'card [REDACTED:card], order 1234567890123'
    """
    for kind, pattern in _DEFAULT_PATTERNS:
        text = pattern.sub(f"[REDACTED:{kind}]", text)
    text = _CARD.sub(_card, text)
    for _, pattern in SETTINGS.patterns:
        text = pattern.sub("[REDACTED]", text)
    return text


def render(value: Any) -> str:
    """Text for a captured value: strings as they are, anything else as canonical JSON,
    redacted then truncated (a ``…[truncated N chars]`` suffix says how much was cut)."""
    text = value if isinstance(value, str) else canonical_json(value)
    text = redact(text)
    limit = SETTINGS.max_length
    if len(text) > limit:
        cut = len(text) - limit
        text = f"{text[:limit]}…[truncated {cut} chars]"
    return text
