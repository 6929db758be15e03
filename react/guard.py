"""The loop guard: exact repeats, oscillation, repeated failures and semantic repeats.

``check`` runs before a call executes and says whether it should be blocked (with a
hint for the model); ``record`` runs after it; ``record_failure`` says whether the tool has
now failed :data:`REPEATED_ERROR_CALLS` times in a row with the same ``error.type`` (the
``repeated_error`` rule of docs/detection.md, the one the analytics flag).

The default embedder hashes character n-grams into a fixed-size vector, so semantic
detection works offline with no model download; any ``Callable[[str], Sequence[float]]``
can replace it. Only calls with the same :func:`frame` are compared (the pagination, the
identifiers and the text fields equal; knobs free), so an advancing page or another id is
never a semantic repeat.

Example:
    >>> guard = LoopGuard(GuardConfig(exact_threshold=1))
    >>> guard.check("search", {"q": "refund policy"}, "h1") is None
    True
    >>> guard.record("search", {"q": "refund policy"}, "h1", "ok")
    >>> guard.check("search", {"q": "refund policy"}, "h1").kind
    'exact'
    >>> embed = HashingEmbedder()
    >>> round(cosine(embed("refund policy 2024"), embed("refund policy, 2024")), 2) >= 0.88
    True
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopsight.ingest.features import ArgField, Kind, argument_fields, is_identifier

Embedder = Callable[[str], Sequence[float]]
_CJK_SPACE = re.compile(
    r"(?<=[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])\s+|\s+(?=[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])"
)


class HashingEmbedder:
    """Character n-gram hashing embedder (L2-normalised, deterministic, offline).

    Text is NFKC-normalised, lower-cased and stripped of punctuation; each n-gram of
    length ``ngram_sizes`` is hashed (blake2b) to one of ``dim`` buckets with a sign.
    """

    def __init__(self, dim: int = 512, ngram_sizes: tuple[int, ...] = (2, 3, 4)) -> None:
        if dim < 8:
            raise ValueError("dim must be >= 8")
        self.dim = dim
        self.ngram_sizes = ngram_sizes

    def __call__(self, text: str) -> list[float]:
        norm = unicodedata.normalize("NFKC", text).lower()
        norm = " ".join("".join(ch if ch.isalnum() else " " for ch in norm).split())
        norm = _CJK_SPACE.sub("", norm)  # spaces carry no meaning next to CJK characters
        vec = [0.0] * self.dim
        padded = f" {norm} "
        for n in self.ngram_sizes:
            for i in range(max(len(padded) - n + 1, 0)):
                digest = hashlib.blake2b(padded[i : i + n].encode(), digest_size=8).digest()
                h = int.from_bytes(digest, "little")
                vec[h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        length = math.sqrt(sum(v * v for v in vec))
        return [v / length for v in vec] if length else vec


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity (0.0 when either vector is zero)."""
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def query_text(args: Any) -> str:
    """The text of a call's free-text and entity string arguments (by path), what semantic repeats
    compare; knobs and pagination (:func:`frame`) are left out."""
    return " ".join(
        f.value for f in _fields(args) if isinstance(f.value, str) and f.kind in (Kind.TEXT, Kind.ENTITY)
    ).strip()


# The structural rule of a semantic repeat (docs/react.md, "Loop guard") is the collector's: its
# field kinds (docs/detection.md, "When two calls are near"; loopsight.ingest.features).
_WORD = re.compile(r"\S+")


def _fields(args: Any) -> list[ArgField]:
    return sorted(argument_fields("", args), key=lambda f: f.path)


def identifiers(text: str) -> frozenset[str]:
    """The identifier-shaped tokens of a text (:func:`loopsight.ingest.features.is_identifier`), lower-cased.

    Example:
        >>> sorted(identifiers("invoice INV-2024-0001 for ann@example.com, please"))
        ['ann@example.com', 'inv-2024-0001']
    """
    out = set()
    for token in _WORD.findall(text):
        token = token.strip(".,;:!?()[]{}\"'").lower()
        if token and is_identifier(token):
            out.add(token)
    return frozenset(out)


def frame(args: Any) -> tuple[Any, ...]:
    """What must be equal for two calls of a tool to be compared as a semantic repeat: the
    collector's frame (:func:`loopsight.ingest.features.argument_fields`). Knobs (``limit``,
    ``top_k``, ``temperature``, ``sort``) are left out, so a tweak is a repeat; pages
    (``page``, ``offset``, ``cursor``, ...) and entities (ids, names, places) are in it with their
    values, so an advancing page is progress and another entity another question; so are the
    paths of the free-text fields and the identifier-shaped tokens of their text; the text itself
    is compared by meaning.

    Example:
        >>> frame({"customer": "ACME Corp", "page": 1}) == frame({"customer": "ACME Corp", "page": 2})
        False
        >>> frame({"q": "refund policy", "limit": 5}) == frame({"q": "refund policy?", "limit": 10})
        True
        >>> frame({"q": "invoice INV-2024-0001"}) == frame({"q": "invoice INV-2024-0002"})
        False
    """
    fixed: list[tuple[str, str, str]] = []
    texts: list[str] = []
    ents: set[str] = set()
    for f in _fields(args):
        if f.kind in (Kind.PAGE, Kind.ENTITY):
            fixed.append((f.path, f.kind.value, str(f.value).strip().lower()))
        elif f.kind is Kind.TEXT:
            texts.append(f.path)
            ents |= identifiers(str(f.value))
    return (tuple(fixed), tuple(texts), tuple(sorted(ents)))


# docs/detection.md, repeated_error: the same tool failing with the same error.type this many
# times in a row (in that tool's own sequence of calls), whatever the arguments.
REPEATED_ERROR_CALLS = 3


@dataclass
class GuardConfig:
    """Loop-guard settings.

    ``exact_threshold``: identical (tool, args) calls allowed before the next is blocked.
    ``semantic_threshold`` / ``semantic_window``: cosine similarity of the query text to
    one of the last ``semantic_window`` calls of the same tool with the same :func:`frame`
    that blocks a call.
    ``min_query_chars`` / ``max_query_chars``: shorter query texts, and longer ones (a document
    passed as an argument, not a query: embedding it would cost seconds), are not compared
    semantically; exact repeats and oscillations are still blocked.
    """

    exact_threshold: int = 3
    oscillation: bool = True
    semantic_threshold: float = 0.88
    semantic_window: int = 5
    min_query_chars: int = 8
    max_query_chars: int = 2000
    embedder: Embedder = field(default_factory=HashingEmbedder)


@dataclass(frozen=True)
class GuardHit:
    """A blocked call: ``kind`` (``exact``/``oscillation``/``semantic``) and the hint for the model."""

    kind: str
    hint: str
    similarity: float | None = None


@dataclass
class _Call:
    tool: str
    args_hash: str
    text: str
    vector: Sequence[float] | None
    outcome: str
    frame: tuple[Any, ...] = ()


_SEMANTIC_HINTS = {
    "empty_result": "A near-identical call ({prev!r}) already returned nothing. Rephrase substantially, "
    "use another tool or source, or answer with what you have.",
    "garbage": "A near-identical call ({prev!r}) already returned unusable content (login wall or ad page). "
    "Use a different source instead of rephrasing the same query.",
    "error": "A near-identical call ({prev!r}) already failed. Change approach instead of rephrasing.",
    "ok": "A near-identical call ({prev!r}) already returned results. Use them instead of searching again.",
}


class LoopGuard:
    """Per-run loop detection state."""

    def __init__(self, config: GuardConfig | None = None) -> None:
        self.config = config or GuardConfig()
        self._calls: list[_Call] = []
        self._counts: dict[tuple[str, str], int] = {}
        self._failing: dict[str, tuple[str, int]] = {}  # tool -> (error.type, failures in a row)

    def check(self, tool: str, args: Any, args_hash: str) -> GuardHit | None:
        """Whether the call should be blocked instead of executed."""
        key = (tool, args_hash)
        if self._counts.get(key, 0) >= self.config.exact_threshold:
            return GuardHit(
                "exact",
                f"You already called {tool} with exactly these arguments {self._counts[key]} times. "
                "Calling it again will not change the result: change approach or answer.",
            )
        if self.config.oscillation and len(self._calls) >= 3:
            a, b, c = (x for x in self._calls[-3:])
            if (
                (a.tool, a.args_hash) != (b.tool, b.args_hash)
                and (c.tool, c.args_hash) == (a.tool, a.args_hash)
                and key == (b.tool, b.args_hash)
            ):
                return GuardHit(
                    "oscillation",
                    f"You are alternating between {a.tool} and {b.tool} with the same arguments "
                    "and getting nowhere. Stop alternating: try something different or answer.",
                )
        return self._semantic(tool, args, args_hash)

    def _comparable(self, text: str) -> bool:
        return self.config.min_query_chars <= len(text) <= self.config.max_query_chars

    def _semantic(self, tool: str, args: Any, args_hash: str) -> GuardHit | None:
        text = query_text(args)
        if not self._comparable(text):
            return None
        vector = self.config.embedder(text)
        shape = frame(args)
        best: tuple[float, _Call] | None = None
        for prev in self._calls[-self.config.semantic_window :]:
            if prev.tool != tool or prev.args_hash == args_hash or prev.vector is None:
                continue
            if prev.frame != shape:
                continue  # another page, another id: progress or another question, not a repeat
            sim = cosine(vector, prev.vector)
            if sim >= self.config.semantic_threshold and (best is None or sim > best[0]):
                best = (sim, prev)
        if best is None:
            return None
        sim, prev = best
        hint = _SEMANTIC_HINTS.get(prev.outcome, _SEMANTIC_HINTS["ok"]).format(prev=prev.text)
        return GuardHit("semantic", hint, round(sim, 4))

    def record(self, tool: str, args: Any, args_hash: str, outcome: str) -> None:
        """Remember an executed call; ``outcome`` is ``ok``, ``empty_result``, ``garbage`` or ``error``."""
        key = (tool, args_hash)
        self._counts[key] = self._counts.get(key, 0) + 1
        text = query_text(args)
        vector = self.config.embedder(text) if self._comparable(text) else None
        self._calls.append(_Call(tool, args_hash, text, vector, outcome, frame(args)))

    def record_failure(self, tool: str, error_type: str | None) -> bool:
        """Record how an executed call of ``tool`` ended (``error_type`` None: it succeeded); True when
        it is the :data:`REPEATED_ERROR_CALLS`-th failure in a row of that tool with that error type.

        Example:
            >>> guard = LoopGuard()
            >>> [guard.record_failure("query_order", "not_found") for _ in range(3)]
            [False, False, True]
        """
        if error_type is None:
            self._failing.pop(tool, None)
            return False
        previous, count = self._failing.get(tool, (error_type, 0))
        count = count + 1 if previous == error_type else 1
        self._failing[tool] = (error_type, count)
        return count >= REPEATED_ERROR_CALLS
