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

import dataclasses
import json
import re
from collections.abc import Iterable
from typing import Any

from loopsight import checks
from loopsight.config import env_bool, env_int
from loopsight.hashing import canonical_json
from loopsight.redaction import add_patterns, compile_patterns, redact_head
from loopsight.redaction import redact as redact  # used from here by handles and loopsight.instrumentation

DEFAULT_MAX_LENGTH = 4096
_SURROGATE = re.compile(r"[\ud800-\udfff]")


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
    enabled = checks.flag("capture_content", enabled, optional=True)
    max_length = checks.non_negative_int("content_max_length", max_length, optional=True)
    patterns = compile_patterns(redact_patterns) if redact_patterns is not None else []
    if enabled is not None:
        SETTINGS.enabled = enabled
    if max_length is not None:
        SETTINGS.max_length = max_length
    add_patterns(patterns)


def clean_text(text: str) -> str:
    """``text`` as UTF-8 can carry it: a surrogate pair joined into its character, a lone surrogate
    (bytes read with ``surrogateescape``, a cut pair) replaced by U+FFFD. An OTLP exporter drops an
    attribute holding one, and a span name holding one loses the whole batch.

    Example:
        >>> clean_text("bad \\udc80 byte"), clean_text("\\ud83d\\ude00")
        ('bad � byte', '😀')
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def clean_value(value: Any) -> Any:
    """An attribute value with :func:`clean_text` applied to it, or to each string of a list or tuple."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, (list, tuple)) and any(isinstance(v, str) for v in value):
        return type(value)(clean_text(v) if isinstance(v, str) else v for v in value)
    return value


def capture_enabled() -> bool:
    """Whether content is recorded right now."""
    return SETTINGS.enabled


def _decoded(value: Any, depth: int = 0) -> Any:
    """``value`` with its bytes (at any depth in dicts, lists, tuples, sets and dataclasses)
    decoded as UTF-8, undecodable bytes replaced by U+FFFD. Containers without bytes are
    returned as they are. Only for values :data:`_ENCODER` cannot write (non-string keys mixed
    with strings, cycles): a walk in Python costs 100 us for a 50-message list."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    if depth > 64 or value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, dict):
        items = {_decoded(k, depth + 1): _decoded(v, depth + 1) for k, v in value.items()}
        return items if any(items.get(k) is not v for k, v in value.items()) else value
    if isinstance(value, (list, tuple, set, frozenset)):
        decoded = [_decoded(v, depth + 1) for v in value]
        if all(d is v for d, v in zip(decoded, value, strict=True)):
            return value
        return decoded if isinstance(value, (list, tuple)) else type(value)(decoded)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
        decoded_fields = {k: _decoded(v, depth + 1) for k, v in fields.items()}
        return decoded_fields if any(decoded_fields[k] is not v for k, v in fields.items()) else value
    return value


def _as_text(obj: Any) -> Any:
    """JSON fallback of :data:`_ENCODER`: bytes as text, dataclasses and sets opened so that bytes
    inside them come back here, anything else as canonical JSON has it."""
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj).decode("utf-8", errors="replace")
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name, None) for f in dataclasses.fields(obj)}
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    return json.loads(canonical_json(obj))


# Canonical JSON (keys sorted, no whitespace, UTF-8) except for bytes: canonical_json writes them
# as hex (for the args hash), which no pattern reads and which decodes straight back to a secret.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_as_text)


def _text_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError):
        return canonical_json(_decoded(value))  # what canonical_json normalises first


def render(value: Any) -> str:
    """Text for a captured value: strings as they are, bytes decoded as UTF-8 (undecodable bytes
    as U+FFFD), anything else as canonical JSON (bytes inside decoded the same way), cut to the
    length limit and redacted, in that order: only the kept head and a margin past it are read
    (a ``…[truncated N chars]`` suffix says how much was cut). Lone surrogates become U+FFFD.

    Example:
        >>> render({"body": b"Authorization: Bearer abc.def-123"})
        '{"body":"Authorization: [REDACTED:bearer]"}'
    """
    text, cut = redact_head(_text_of(value), SETTINGS.max_length)
    return clean_text(f"{text}…[truncated {cut} chars]" if cut else text)
