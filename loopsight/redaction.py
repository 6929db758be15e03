"""Secrets taken out of text: API keys, bearer tokens, JWTs, emails, card numbers, passwords in
URLs, ``Authorization`` header values, values of secret-named fields, and patterns the user
adds. The decorators apply it to captured content and exception messages, the collector to
every producer's content, exception and status messages.

Every pattern costs time linear in the text, whatever the text: no pattern can fail at one
start and then rescan the same characters from the next start (each either matches the whole
run it starts, or fails within a bounded number of characters), so hostile text such as
``sk-sk-sk-…`` or ``eyJa-eyJa-…`` cannot hold the caller's thread.

Example:
    >>> redact("key sk-abcdefghijklmnop1234 mail bob@example.com")
    'key [REDACTED:api_key] mail [REDACTED:email]'
    >>> redact("could not connect to postgres://admin:Hunter2pw@localhost:5432/orders")
    'could not connect to postgres://admin:[REDACTED:password]@localhost:5432/orders'
    >>> redact('{"password":"Tr0ub4dor&3","user":"bob"}')
    '{"password":"[REDACTED:secret]","user":"bob"}'
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable
from typing import Any

from loopsight import checks

# Tokens that start at a word boundary, found in one pass (a named group each):
# - a whole sk-/pk-/rk- token (letters, digits, "_" and "-" to the first other character), always
#   matched to its end so that a failed candidate is never rescanned from a later "sk-" inside it
#   (that rescan made "sk-sk-sk-…" quadratic). It is a key when, after its prefix, it holds a run
#   of 16 or more [A-Za-z0-9_]: every text the former ``(?:sk|pk|rk)-(?:[A-Za-z0-9]+-)*
#   [A-Za-z0-9_]{16,}`` matched is redacted, whole.
# - a JWT; when a candidate is not one, the rest of its [A-Za-z0-9_-] run is taken all the same
#   so that no later "eyJ" in that run is tried again.
# - "Basic <base64>", only when the base64 decodes to text with a colon (user:password), so
#   "basic understanding" stays.
_TOKENS = re.compile(
    # The first character, then "(?<!\w.)" for the word boundary before it: a pattern that
    # starts with a character set lets the engine skip every other character without trying a
    # match there ("\b" first cost 65 ns a character).
    r"[BbesprAgx](?<!\w.)(?:"
    r"(?<=[Bb])(?P<bearer>(?i:earer)\s++[A-Za-z0-9\-._~+/]++=*+)"
    r"|(?<=[Bb])(?i:asic)\s++(?P<basic>[A-Za-z0-9+/]{8,}+={0,2})"
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
    if kind == "basic":
        try:
            decoded = base64.b64decode(match.group("basic"), validate=True)
        except (binascii.Error, ValueError):
            return match.group(0)
        return "[REDACTED:basic]" if b":" in decoded else match.group(0)
    return match.group(0) if kind is None else f"[REDACTED:{_KINDS[kind]}]"


# The password of a URL's userinfo (scheme://user:password@host): scheme, user and host kept.
# The search starts at the literal "://"; the password runs to the last "@" before a space,
# "/", "?" or "#".
_URL_PASSWORD = re.compile(r"://([^\s:/?#@\[\]]*+):([^\s/?#]+)@")

# The value after a field name: a quoted string to its closing quote (or the end of the line),
# else up to a space, quote, bracket or separator ("&" only before another "name="); a value
# already redacted is left as it is.
_VALUE = (
    r"(?!\\?[\"']?\[REDACTED)"
    # JSON inside a JSON string (a tool call's "arguments" in a logged request): \"value\"
    r"(?:\\\"(?:[^\"\\\n]|\\[^\"\n])*+(?:\\\")?"
    r"|\"(?:[^\"\\\n]|\\.)*+\"?"
    r"|'(?:[^'\\\n]|\\.)*+'?"
    r"|(?:[^\s\"',;&<>()\[\]{}]|&(?![A-Za-z_][A-Za-z0-9_.-]*+=))++)"
)
_NAMED = re.compile(r"[ \t]*+[:=]")  # a separator after a "value": it was the next field's name
_SEPARATOR = r"(?:\\?[\"'])?[ \t]*+[:=][ \t]*+"
# Fields whose value is a secret, any case, the name ending in one of these words (DB_PASSWORD,
# x-api-key, client_secret, accessToken): each entry is the word's root, found with str.find on
# the lowered text (a regex trying every position cost 0.7 ms per 4 KiB), and the pattern
# matched from there. Authorization and cookie headers take the whole line (the value has a
# scheme and spaces: "Basic dXNl…").
_KEY_BEFORE = "|".join(
    f"(?<={p}{sep})" for p in ("api", "private", "secret", "access", "signing", "encryption") for sep in ("", "_", "-")
)
# A pagination token (page_token, nextPageToken, continuation-token) is a position, not a secret.
_NOT_A_POSITION = "".join(
    f"(?<!{p}{sep})" for p in ("page", "next", "continuation", "resume", "sync", "cursor") for sep in ("", "_", "-")
)
_FIELDS: list[tuple[str, re.Pattern[str], str]] = [
    (
        "pass",
        re.compile(rf"(?i)pass(?:word|wd|phrase)({_SEPARATOR})({_VALUE})"),
        "secret",
    ),
    ("pwd", re.compile(rf"(?i)pwd({_SEPARATOR})({_VALUE})"), "secret"),
    (
        "secret",
        re.compile(rf"(?i)secret(?:[_-]?(?:access[_-]?)?key)?({_SEPARATOR})({_VALUE})"),
        "secret",
    ),
    ("token", re.compile(rf"(?i)(?:{_NOT_A_POSITION})token({_SEPARATOR})({_VALUE})"), "secret"),
    ("key", re.compile(rf"(?i)(?:{_KEY_BEFORE})key({_SEPARATOR})({_VALUE})"), "secret"),
    ("credential", re.compile(rf"(?i)credentials?({_SEPARATOR})({_VALUE})"), "secret"),
    ("session", re.compile(rf"(?i)session[_-]?id({_SEPARATOR})({_VALUE})"), "secret"),
    (
        "authorization",
        re.compile(r"(?i)authorization([\"']?[ \t]*+[:=][ \t]*+)((?![\"']?\[REDACTED)[\"']?[^\r\n\"']++[\"']?)"),
        "authorization",
    ),
    (
        "cookie",
        re.compile(r"(?i)cookie([\"']?[ \t]*+[:=][ \t]*+)((?![\"']?\[REDACTED)[\"']?[^\r\n\"']++[\"']?)"),
        "cookie",
    ),
]
_ROOTS = re.compile("|".join(root for root, _, _ in _FIELDS), re.IGNORECASE)  # when lower() changes lengths


def _secret_fields(text: str) -> str:
    low = text.lower()
    hits: list[tuple[int, re.Pattern[str], str]] = []
    if len(low) == len(text):
        for root, pattern, kind in _FIELDS:
            pos = low.find(root)
            while pos >= 0:
                hits.append((pos, pattern, kind))
                pos = low.find(root, pos + 1)
    else:  # a few characters lower to two: find the roots with a regex instead
        by_root = {root: (pattern, kind) for root, pattern, kind in _FIELDS}
        for found in _ROOTS.finditer(text):
            hits.append((found.start(), *by_root[found.group(0).lower()]))
    if not hits:
        return text
    hits.sort(key=lambda hit: hit[0])
    out: list[str] = []
    done = 0
    for pos, pattern, kind in hits:
        if pos < done:
            continue
        match = pattern.match(text, pos)
        if match is None or match.group(2) in ('""', "''", '\\"\\"'):
            continue
        value = match.group(2)
        quote = '\\"' if value.startswith('\\"') else (value[0] if value[0] in "\"'" else "")
        if not quote and _NAMED.match(text, match.end()):
            continue  # "secret: aws_secret_access_key = …": the value is the next field's name, redacted there
        closed = quote if len(value) > len(quote) and value.endswith(quote) else ""
        out += (text[done : match.start(2)], f"{quote}[REDACTED:{kind}]{closed}")
        done = match.end()
    return "".join(out) + text[done:] if out else text


_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,255}\.[A-Za-z]{2,63}\b")
_CARD = re.compile(r"\d(?<!\w\d)(?:[ -]?\d){12,18}\b")  # "\b" after the first digit, as in _TOKENS

USER_PATTERNS: list[re.Pattern[str]] = []
"""Patterns added with :func:`add_patterns`, replaced by ``[REDACTED]``."""


def compile_patterns(patterns: Any) -> list[re.Pattern[str]]:
    """``patterns`` (a list of regular expressions, as text or compiled) compiled; a lone
    pattern, a non-str item or an invalid expression is refused, naming it.

    Example:
        >>> compile_patterns(["("])
        Traceback (most recent call last):
        ...
        ValueError: redact_patterns[0] is not a valid regular expression ('('): missing ), unterminated subpattern at position 0
    """
    if isinstance(patterns, (str, bytes, re.Pattern)):
        raise TypeError(f"redact_patterns must be a list of patterns, got the single {patterns!r}: pass [{patterns!r}]")
    return checks.each("redact_patterns", patterns, _compiled)


def _compiled(name: str, pattern: Any) -> re.Pattern[str]:
    if isinstance(pattern, re.Pattern):
        return pattern
    if not isinstance(pattern, str):
        raise TypeError(f"{name} must be a str or a compiled re.Pattern, got {pattern!r}")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{name} is not a valid regular expression ({pattern!r}): {exc}") from None


def add_patterns(patterns: Iterable[str | re.Pattern[str]]) -> None:
    """Also redact what these patterns match.

    Example:
        >>> add_patterns([r"ORDER-\\d+"])
        >>> redact("see ORDER-1234")
        'see [REDACTED]'
        >>> USER_PATTERNS.clear()
    """
    USER_PATTERNS.extend(compile_patterns(patterns))


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
        >>> redact("Authorization: Basic dXNlcjpwYXNzd29yZA==")
        'Authorization: [REDACTED:basic]'
        >>> redact("x-api-key: 8f14e45fceea167a5a36dedd4bea2543, retries=3")
        'x-api-key: [REDACTED:secret], retries=3'
        >>> redact("card 4111 1111 1111 1111, order 1234567890123")
        'card [REDACTED:card], order 1234567890123'
    """
    text = _TOKENS.sub(_token, text)
    if "://" in text:
        text = _URL_PASSWORD.sub(r"://\1:[REDACTED:password]@", text)
    text = _secret_fields(text)
    if "@" in text:  # bounded (RFC 5321 lengths) so hostile text like "a.a.a..." is not quadratic
        text = _EMAIL.sub("[REDACTED:email]", text)
    text = _CARD.sub(_card, text)
    for pattern in USER_PATTERNS:
        text = pattern.sub("[REDACTED]", text)
    return text


def redact_head(
    text: str, limit: int, margin: int = 512, redactor: Callable[[str], str] | None = None
) -> tuple[str, int]:
    """``text`` cut to ``limit`` characters and redacted, the cut made first (redaction costs
    time in proportion to what it reads, so a 10 MB value costs what its head costs), and the
    number of characters cut. The head redacted runs ``margin`` characters past the limit, so a
    secret that straddles the limit is redacted before the cut (kept in part it would leak).
    ``redactor`` is :func:`redact` unless given (one that remembers repeats, say).

    Example:
        >>> redact_head("see sk-abcdefghijklmnop1234 " + "y" * 100, 10)
        ('see [REDAC', 113)
        >>> redact_head("short sk-abcdefghijklmnop1234", 100)
        ('short [REDACTED:api_key]', 0)
        >>> jwt = "token=eyJhbGciOiJIUzI1NiJ9." + "a" * 3000 + ".sig "  # redacted, it shrinks the head
        >>> text = jwt + "x" * (8192 + 512 - 10 - len(jwt)) + "john.smith@corp.example.com"  # cut at the head's end
        >>> kept, cut = redact_head(text, 8192)
        >>> "john" in kept, "eyJ" in kept, cut > 0
        (False, False, True)
    """
    redactor = redactor or redact
    if len(text) <= limit + margin:
        done = redactor(text)
        return (done, 0) if len(done) <= limit else (done[:limit], len(done) - limit)
    done = redactor(text[: limit + margin])
    # The head's last ``margin`` characters were redacted without what follows them (a secret
    # cut there is not recognised), so they are never kept, however much the redaction shrank.
    kept = done[: max(0, min(limit, len(done) - margin))]
    return kept, len(done) - len(kept) + len(text) - (limit + margin)
