"""Secrets taken out of text: API keys, bearer tokens, JWTs, emails, card numbers, and patterns
the user adds. The decorators apply it to captured content and exception messages, the collector to
every producer's content, exception and status messages.

Every pattern costs time linear in the text, whatever the text: no pattern can fail at one
start and then rescan the same characters from the next start (each either matches the whole
run it starts, or fails within a bounded number of characters), so hostile text such as
``sk-sk-sk-…`` or ``eyJa-eyJa-…`` cannot hold the caller's thread.

Example:
    >>> redact("key sk-abcdefghijklmnop1234 mail bob@example.com")
    'key [REDACTED:api_key] mail [REDACTED:email]'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Tokens that start at a word boundary, found in one pass (a named group each):
# - a whole sk-/pk-/rk- token (letters, digits, "_" and "-" to the first other character), always
#   matched to its end so that a failed candidate is never rescanned from a later "sk-" inside it
#   (that rescan made "sk-sk-sk-…" quadratic). It is a key when, after its prefix, it holds a run
#   of 16 or more [A-Za-z0-9_]: every text the former ``(?:sk|pk|rk)-(?:[A-Za-z0-9]+-)*
#   [A-Za-z0-9_]{16,}`` matched is redacted, whole.
# - a JWT; when a candidate is not one, the rest of its [A-Za-z0-9_-] run is taken all the same
#   so that no later "eyJ" in that run is tried again.
_TOKENS = re.compile(
    # The first character, then "(?<!\w.)" for the word boundary before it: a pattern that
    # starts with a character set lets the engine skip every other character without trying a
    # match there ("\b" first cost 65 ns a character).
    r"[BbesprAgx](?<!\w.)(?:"
    r"(?<=[Bb])(?P<bearer>(?i:earer)\s++[A-Za-z0-9\-._~+/]++=*+)"
    r"|(?<=e)yJ(?:(?P<jwt>[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]++)|[A-Za-z0-9_-]*+)"
    r"|(?<=[spr])(?P<prefixed>k-[A-Za-z0-9_-]++)"
    r"|(?<=A)(?P<aws>KIA[0-9A-Z]{16}\b)"  # AWS access key id
    r"|(?<=A)(?P<google>Iza[0-9A-Za-z_-]{35})"  # Google API keys
    r"|(?<=g)(?P<github>h[pousr]_[A-Za-z0-9]{30,}+)"  # GitHub tokens
    r"|(?<=x)(?P<slack>ox[abprs]-[A-Za-z0-9-]{10,}+)"  # Slack tokens
    r")"
)
_KINDS = {
    "bearer": "bearer",
    "jwt": "jwt",
    "aws": "api_key",
    "google": "api_key",
    "github": "api_key",
    "slack": "api_key",
}
_LONG_PART = re.compile(r"[A-Za-z0-9_]{16}")


def _token(match: re.Match[str]) -> str:
    kind = match.lastgroup
    if kind == "prefixed":
        return "[REDACTED:api_key]" if _LONG_PART.search(match.group(0), 3) else match.group(0)
    return match.group(0) if kind is None else f"[REDACTED:{_KINDS[kind]}]"


_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,255}\.[A-Za-z]{2,63}\b")
_CARD = re.compile(r"\d(?<!\w\d)(?:[ -]?\d){12,18}\b")  # "\b" after the first digit, as in _TOKENS

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
    text = _TOKENS.sub(_token, text)
    if "@" in text:  # bounded (RFC 5321 lengths) so hostile text like "a.a.a..." is not quadratic
        text = _EMAIL.sub("[REDACTED:email]", text)
    text = _CARD.sub(_card, text)
    for pattern in USER_PATTERNS:
        text = pattern.sub("[REDACTED]", text)
    return text


def redact_head(text: str, limit: int, margin: int = 512) -> tuple[str, int]:
    """``text`` cut to ``limit`` characters and redacted, the cut made first (redaction costs
    time in proportion to what it reads, so a 10 MB value costs what its head costs), and the
    number of characters cut. The head redacted runs ``margin`` characters past the limit, so a
    secret that straddles the limit is redacted before the cut (kept in part it would leak).

    Example:
        >>> redact_head("see sk-abcdefghijklmnop1234 " + "y" * 100, 10)
        ('see [REDAC', 113)
        >>> redact_head("short sk-abcdefghijklmnop1234", 100)
        ('short [REDACTED:api_key]', 0)
    """
    head = text if len(text) <= limit + margin else text[: limit + margin]
    done = redact(head)
    rest = len(done) + len(text) - len(head) - limit  # exact unless a secret lies past the head
    if rest <= 0:
        return done, 0
    return done[:limit], rest
