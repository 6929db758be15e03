"""When two tool results are the same answer: the result hash ``no_progress`` loops compare.

A result is hashed after whitespace is collapsed and case folded, a JSON-encoded string
decoded, and fields that change on every call (:data:`VOLATILE_KEYS`: ``took``,
``request_id``, ``timestamp``, ...) dropped from JSON. A result too generic to tell questions
apart has no hash: shorter than :data:`MIN_RESULT_CHARS`, made only of status words
(``true``, ``{"ok": true}``, ``"No results found."``), or a short sentence acknowledging a side
effect ("The file has been uploaded to your workspace."). A tool that attaches files a, b and
c and answers ``true`` each time has done what it was asked; a search that returns the same
page of hits for three different queries has not given the model anything new.

The decorators send this hash as ``loopsight.tool.result_hash`` (the result itself only when
content capture is on); the collector computes it from the result text other producers send,
then drops the text. Like the arguments' hash it is unkeyed: a guessed result can be confirmed.

Example:
    >>> result_hash("true") is None, result_hash('{"status": "ok"}') is None
    (True, True)
    >>> page = '[{"title": "Refund policy", "url": "https://shop.example/refunds"}]'
    >>> result_hash(page) == result_hash(page.replace(", ", ",   ")) != None
    True
    >>> result_hash('{"hits": 3, "took": 12, "q": "refund policy for damaged items"}') == result_hash(
    ...     '{"hits": 3, "took": 40, "q": "refund policy for damaged items"}')
    True
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from typing import Any

MIN_RESULT_CHARS = 48
"""A result shorter than this (normalised) is too short to tell calls apart."""
MAX_RESULT_CHARS = 8192
"""Only the first characters of a result are read."""
LONG_RESULT_CHARS = 512
"""Results longer than this are never too generic; they are hashed as sent (a tool serialises
one answer the same way each time) unless JSON with a volatile field in its first 512 characters."""
ACK_CHARS = 200
"""Plain-text results up to this length are checked for the grammar of an acknowledgement."""

VOLATILE_KEYS = frozenset(
    [
        "request_id",
        "requestid",
        "trace_id",
        "traceid",
        "span_id",
        "took",
        "took_ms",
        "elapsed",
        "elapsed_ms",
        "latency",
        "latency_ms",
        "duration",
        "duration_ms",
        "timestamp",
        "ts",
        "retrieved_at",
        "fetched_at",
        "generated_at",
        "served_at",
        "server_time",
        "response_time",
        "cache_hit",
        "cached",
        "etag",
    ]
)
"""Result fields that change on every call and say nothing about the answer."""
STATUS_WORDS = frozenset(
    [
        "ok",
        "okay",
        "success",
        "successful",
        "successfully",
        "succeeded",
        "done",
        "true",
        "false",
        "null",
        "none",
        "yes",
        "no",
        "not",
        "error",
        "failed",
        "failure",
        "status",
        "result",
        "results",
        "found",
        "empty",
        "nothing",
        "saved",
        "sent",
        "attached",
        "created",
        "updated",
        "deleted",
        "added",
        "removed",
        "completed",
        "complete",
        "accepted",
        "queued",
        "scheduled",
        "received",
        "processed",
        "pending",
        "processing",
        "delivered",
        "submitted",
        "uploaded",
        "stored",
        "recorded",
        "logged",
        "registered",
        "confirmed",
        "approved",
        "cancelled",
        "canceled",
        "acknowledged",
        "ack",
        "noted",
        "applied",
        "enabled",
        "disabled",
        "started",
        "stopped",
        "running",
        "file",
        "files",
        "message",
        "messages",
        "email",
        "note",
        "item",
        "items",
        "record",
        "entry",
        "request",
        "task",
        "job",
        "event",
        "has",
        "have",
        "been",
        "was",
        "were",
        "is",
        "are",
        "be",
        "will",
        "the",
        "a",
        "an",
        "and",
        "to",
        "of",
        "for",
        "your",
        "you",
        "it",
        "this",
        "with",
        "in",
        "on",
        "at",
        "shortly",
        "soon",
        "already",
        "exists",
    ]
)
"""Words of acknowledgements and empty answers: a result of only these says nothing specific."""
_ACK = re.compile(
    r"\b(?:received|sent|saved|created|updated|deleted|queued|scheduled|uploaded|attached|submitted|"
    r"processed|confirmed|completed|added|removed|recorded|logged|noted|registered|cancell?ed|archived|"
    r"published|posted|shared|moved|renamed|copied|started|stopped|enabled|disabled|applied|accepted|"
    r"approved|booked|reserved|paid|delivered|forwarded|assigned|closed|opened|merged|set|stored)\b"
)
"""Past participles that make a short sentence an acknowledgement of a side effect."""
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# Only whether there is a match is read, so the backslash of an escaped opening quote is not
# matched: a pattern starting with a literal quote is searched for several times faster.
_VOLATILE_KEY = re.compile(r'"(?:' + "|".join(sorted(VOLATILE_KEYS, key=len, reverse=True)) + r')\\?"\s*:')
_RESULT_WORD = re.compile(r"[^\W\d_]{2,}|\d+")


def _key_name(name: str) -> str:
    return _CAMEL.sub("_", name).lower().replace("-", "_").strip("_")


def _drop_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_volatile(v) for k, v in value.items() if _key_name(str(k)) not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [_drop_volatile(v) for v in value]
    return value


def _without_volatile(text: str) -> str | None:
    with contextlib.suppress(ValueError, RecursionError):
        value = json.loads(text)
        if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
            value = json.loads(value)
        return json.dumps(_drop_volatile(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return None


def normalise_result(text: str) -> str | None:
    """The canonical form of a result, or ``None`` when it is too generic to count.

    Example:
        >>> normalise_result("Message sent.") is None
        True
        >>> normalise_result('{"b": 1, "a": "%s", "took": 12}' % ("x " * 30)).startswith('{"a"')
        True
    """
    raw = text[:MAX_RESULT_CHARS]
    if len(raw) > LONG_RESULT_CHARS:
        if raw.lstrip()[:1] in ("{", "[", '"') and _VOLATILE_KEY.search(raw, 0, 512):  # metadata comes first
            return _without_volatile(raw) or raw
        return raw
    text = raw.strip()
    if text[:1] == '"':  # a JSON-encoded string (Traceloop sends json.dumps(result))
        with contextlib.suppress(ValueError, RecursionError):
            inner = json.loads(text)
            if isinstance(inner, str):
                text = inner.strip()
    prose = text[:1] not in ("{", "[")
    if not prose and _VOLATILE_KEY.search(text, 0, 512):
        text = _without_volatile(text) or text
    canonical = " ".join(text.split()).lower()
    if len(canonical) < MIN_RESULT_CHARS:
        return None
    for m in _RESULT_WORD.finditer(canonical):
        if m.group() not in STATUS_WORDS:
            break
    else:
        return None  # only status words
    if prose and len(canonical) <= ACK_CHARS and _ACK.search(canonical) and not canonical.startswith("<"):
        return None
    return canonical


def result_hash(text: str | None) -> str | None:
    """16 hex characters of the normalised result's sha256, or ``None`` (no or a generic result)."""
    if text is None:
        return None
    canonical = normalise_result(text)
    if canonical is None:
        return None
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:16]
