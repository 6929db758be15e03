"""Secrets taken out of text: API keys, bearer tokens, JWTs, emails, card numbers, and patterns
the user adds. The decorators apply it to captured content, the collector to every producer's
content, exception and status messages.

Example:
    >>> redact("key sk-abcdefghijklmnop1234 mail bob@example.com")
    'key [REDACTED:api_key] mail [REDACTED:email]'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

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

USER_PATTERNS: list[re.Pattern[str]] = []
"""Patterns added with :func:`add_patterns`, replaced by ``[REDACTED]``."""


def add_patterns(patterns: Iterable[str | re.Pattern[str]]) -> None:
    """Also redact what these patterns match.

    Example:
        >>> add_patterns([r"ORDER-\\d+"])
        >>> redact("see ORDER-1234")
        'see [REDACTED]'
        >>> USER_PATTERNS.clear()
    """
    for pattern in patterns:
        USER_PATTERNS.append(pattern if isinstance(pattern, re.Pattern) else re.compile(pattern))


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
    for pattern in USER_PATTERNS:
        text = pattern.sub("[REDACTED]", text)
    return text
