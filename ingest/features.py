"""What the collector keeps of a tool call's argument text, so that loop detection needs no text.

Content is never stored unless the user opts in, so everything the loop rules compare
(``stores/sql/loops_core.sql``, docs/detection.md) is computed here from the raw argument
text and kept as a few small columns (:meth:`CallFeatures.columns`):

* **argument structure** — the arguments are parsed (JSON, producer wrappers such as
  Traceloop's ``{"args": [], "kwargs": {...}}``, double-encoded JSON, a bare string), nested
  objects flattened to field paths, and each field classified (:func:`classify`) as a
  **knob** (a number or a short enum token tuning the same question: ``limit``, ``top_k``,
  ``temperature``, ``sort``), **pagination** (a position in a result set: ``page``,
  ``offset``, ``cursor``, ``page_token``), an **entity** (what the question is about: ids,
  proper nouns, paths, emails, dates) or **free text** (compared by meaning). Structure
  decides first; field names only break ties. Stored: ``args_frame``, one hash of the
  non-knob fields' paths and kinds, the entities' values and the pagination's values (knobs
  may change in a repeat; an entity or a page may not).
* **free text** (all text fields joined) — a hash of the normalised text, the hashes of its
  distinct content words in text order (stop words and query filler dropped, plural ``s``
  dropped; words of 6+ letters by their consonant skeleton, so most typos keep the hash), the
  subset that are identifiers, proper nouns or marked time/state words (the *identifier
  guard*), and a 64-d vector: the sum of the content words' unit vectors
  (:mod:`loopsight.ingest.embedding`), stored as int8 direction + float norm. Shared words
  add the same vector to both sums, so two calls' difference is that of their *differing*
  words alone: the *differing-words guard* reads it, with no text.

Hashes are keyed BLAKE2b and the vectors turned by a random rotation drawn from the same key
(:func:`set_hash_key`; the collector keeps a secret key per store): without the key a word
hash cannot be confirmed by hashing a dictionary, and a vector cannot be read against the
public word vectors (which recover ~70 % of a short query's content words from an unturned
sum). Rotation keeps every cosine the rules compute.

Example:
    >>> a = call_features('{"q": "orders", "limit": 10}', model=None)
    >>> b = call_features('{"q": "orders", "limit": 11}', model=None)
    >>> a.frame == b.frame and a.text.fp == b.text.fp
    True
    >>> [(f.path, f.kind.value) for f in argument_fields('{"kwargs": {"city": "Paris", "days": 3}}')]
    [('city', 'entity'), ('days', 'knob')]
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from loopsight.ingest.embedding import WordVectors, default_model

if TYPE_CHECKING:
    import numpy as np

MAX_CHARS = 2048
"""Argument text beyond this is ignored."""
MAX_WORDS = 32
"""Distinct content words kept per call (the first ones in text order)."""
MAX_LEAVES = 64
MAX_DEPTH = 8

_UNSET: Any = object()
T = TypeVar("T")
_KEY = b""
_KEYED: Any = None
_ROTATION: Any = None


def set_hash_key(key: bytes) -> None:
    """Key every hash this module makes (up to 64 bytes), e.g. a random secret kept per store.

    Calls are only comparable when hashed with the same key, so set it once at start-up.
    """
    global _KEY, _KEYED, _ROTATION
    if len(key) > 64:
        raise ValueError("a BLAKE2b key holds at most 64 bytes")
    _KEY = bytes(key)
    _KEYED = hashlib.blake2b(digest_size=8, key=_KEY) if _KEY else None
    _ROTATION = _rotation(_KEY) if _KEY else None
    clear_caches()


def _rotation(key: bytes) -> Any:
    """A random orthogonal matrix drawn from ``key`` (QR of a Gaussian matrix, signs fixed)."""
    import numpy as np

    from loopsight.ingest.embedding import DIMS

    seed = int.from_bytes(hashlib.blake2b(b"rotation", digest_size=8, key=key).digest(), "little")
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((DIMS, DIMS)))
    return (q * np.sign(np.diag(r))).astype(np.float32)


def hash64(*parts: str) -> int:
    """A keyed 64-bit hash (unsigned; DuckDB ``UBIGINT``) of the parts, joined unambiguously.

    Example:
        >>> hash64("a", "bc") != hash64("ab", "c")
        True
        >>> 0 <= hash64("paris") < 2**64
        True
    """
    data = "\x1f".join(parts).encode("utf-8", "surrogatepass")
    if _KEYED is None:
        return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")
    h = _KEYED.copy()  # copying a keyed state is 3x cheaper than keying a new one
    h.update(data)
    return int.from_bytes(h.digest(), "little")


# --------------------------------------------------------------------------- argument structure


class Kind(enum.StrEnum):
    """How a field of the arguments is compared between two calls of a tool."""

    KNOB = "knob"
    """Tunes the same question (``limit``, ``top_k``, ``temperature``, ``sort``): may change in a repeat."""
    PAGE = "page"
    """A position in a result set (``page``, ``offset``, ``cursor``): a change is progress."""
    ENTITY = "entity"
    """What the question is about (ids, names, places, paths, dates): a change is another question."""
    TEXT = "text"
    """Free text (queries, questions): compared by meaning."""


@dataclass(frozen=True, slots=True)
class ArgField:
    """One leaf of the arguments: its dotted path, its kind and its value (never stored)."""

    path: str
    kind: Kind
    value: Any


def _names(*groups: str) -> frozenset[str]:
    return frozenset(w for g in groups for w in g.split())


# Field names only break ties; each list holds normalised names (snake_case, lower case).
PAGE_NAMES = _names(
    "page page_number page_num pageno page_index offset start start_index startindex skip from_",
    "cursor page_token pagetoken next_token next_page_token continuation continuation_token",
    "after before starting_after ending_before marker next since_id max_id scroll_id",
    "last_evaluated_key exclusive_start_key position section chapter part line line_number index idx",
)
# Names that are pagination only when the value is a number or an opaque token (a date or a
# place under these names is an entity: {"from": "LHR"}, {"after": "2024-05-01"}).
AMBIGUOUS_PAGE_NAMES = _names("start from after before since")
KNOB_NAMES = _names(
    "limit top_k topk k n num num_results max_results maxresults count size page_size per_page",
    "rows max_rows max_items max_hits hits results num_docs max_tokens max_length max_chars length",
    "threshold min_score score_threshold similarity_threshold min_similarity cutoff temperature",
    "top_p top_n frequency_penalty presence_penalty seed depth max_depth radius distance timeout",
    "retries sort sort_by sort_order sortby order order_by orderby direction dir ascending asc desc",
    "mode search_mode format output_format response_format fields include exclude verbose detail",
    "detailed details safe_search safesearch fuzzy exact strict days hours weeks units unit",
    "granularity interval resolution precision level detail_level recency freshness time_range",
    "search_type type kind engine model quality first last take",
)
ENTITY_NAMES = _names(
    "id uuid guid key name user username user_id customer account email phone address city",
    "country region state zip zipcode postcode postal_code location place destination origin to",
    "from dest src source target path file filename file_path url uri link domain host repo",
    "repository owner org organization project branch commit sha tag ticket issue pr order",
    "order_id invoice sku product item title_id symbol ticker currency base quote language lang",
    "date day month year time datetime timestamp since until start_date end_date date_from date_to",
    "amount quantity qty price value total number lat lon lng latitude longitude status state_code",
    "category label channel recipient sender author person company team table database schema",
    "column collection index_name bucket topic_id thread conversation session document doc version",
)
TEXT_NAMES = _names(
    "q query search search_query search_term term terms keywords keyword question prompt text",
    "input message content body description instruction instructions task goal request ask",
    "title subject summary note comment statement sentence phrase topic query_text user_query",
    "pattern regex glob",
)
_ID_NAME = re.compile(r"(?:^|_)(?:id|ids|uuid|guid|key|sku|ref|no)$")
# Names that mark a position when no list above has them: start_line, next_page, row_offset, resume_token.
_PAGE_NAME = re.compile(
    r"(?:^|_)(?:page|offset|cursor|skip|start|after|before)(?:_|$)|(?:page|next|continuation|resume)_token$"
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_QUANTITY = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)\s?(?:ms|s|sec|m|min|h|d|w|y|k|kb|mb|gb|%|px)", re.I)
_DATEISH = re.compile(r"\d{4}-\d{2}(?:-\d{2})?|\d{1,2}/\d{1,2}/\d{2,4}|\d{2}:\d{2}")
_ENUM_TOKEN = re.compile(r"[a-z][A-Za-z_\-]{0,23}")
_IDENTIFIER = re.compile(r"\d|\w[\-/.@#:\\]\w|^[#@/~]|://")
# An opaque position token (a cursor): long, no spaces, and mixed case, digits or token characters.
_OPAQUE = re.compile(r"(?=\S{8,}$)(?=.*(?:\d|[A-Z].*[a-z]|[a-z].*[A-Z]|[=_\-+/]))\S+")


_name_cache: dict[str, str] = {}


def is_identifier(token: str) -> bool:
    """Whether a token is shaped like an identifier: a digit, an inner ``- / . @ # : \\``, a
    leading ``# @ / ~`` or a URL (``INV-2024-0001``, ``a.pdf``, ``ann@x.io``, ``#123``).

    Example:
        >>> [is_identifier(t) for t in ("inv-2024-0001", "ann@x.io", "refund", "k8s")]
        [True, True, False, True]
    """
    return _IDENTIFIER.search(token) is not None


def normalise_name(name: str) -> str:
    """``maxResults`` → ``max_results``, ``page-token`` → ``page_token``, ``from`` → ``from_``
    (``from`` needs a mark: it is also a destination's partner)."""
    out = _name_cache.get(name)
    if out is None:
        out = _CAMEL.sub("_", name).lower().replace("-", "_").replace(" ", "_").strip("_")
        out = "from_" if out == "from" else out
        if len(_name_cache) < 65_536:
            _name_cache[name] = out
    return out


NOT_JSON: Any = object()
"""What a caller passes as the parsed value of text that is not JSON (``json.loads`` raised)."""


def parse_arguments(text: str, value: Any = _UNSET) -> Any:
    """The argument value a producer sent: JSON (also double-encoded), with producer wrappers
    unwrapped, or the text itself when it is not JSON. ``value``: ``json.loads(text)`` when the
    caller has parsed the text already (:data:`NOT_JSON` when it is not JSON), so it is parsed once.

    Example:
        >>> parse_arguments('{"args": [], "kwargs": {"q": "x"}}')
        {'q': 'x'}
        >>> parse_arguments('{"args": ["a.pdf"], "kwargs": {"mode": "r"}}')
        {'mode': 'r', 'args': ['a.pdf']}
        >>> parse_arguments('"{\\\\"city\\\\": \\\\"Oslo\\\\"}"')
        {'city': 'Oslo'}
        >>> parse_arguments("weather in oslo")
        'weather in oslo'
    """
    if len(text) > MAX_CHARS:
        text, value = text[:MAX_CHARS], _UNSET  # the head is read: the whole text's value is not its value
    if value is _UNSET:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return text
    elif value is NOT_JSON:
        return text
    if isinstance(value, str) and value[:1] in "{[":
        with contextlib.suppress(ValueError, RecursionError):
            value = json.loads(value)
    if isinstance(value, dict) and value and set(value) <= {"args", "kwargs"}:
        kwargs = value.get("kwargs")
        args = value.get("args")
        out: dict[str, Any] = dict(kwargs) if isinstance(kwargs, dict) else {}
        if (isinstance(args, list) and args) or args not in (None, []):
            out["args"] = args
        return out
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if key in ("arguments", "parameters", "params", "tool_input") and isinstance(inner, dict):
            return inner
    return value


def _flatten(value: Any, path: str, out: list[tuple[str, Any]], depth: int) -> None:
    if len(out) >= MAX_LEAVES:
        return
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            out.append((path, json.dumps(value, sort_keys=True, default=str)))
            return
        for key in sorted(value, key=str):
            name = str(key)
            _flatten(value[key], f"{path}.{name}" if path else name, out, depth + 1)
    elif isinstance(value, list):
        if all(v is None or isinstance(v, (str, int, float, bool)) for v in value):
            out.append((path, tuple(value)))
        else:
            for item in value:
                _flatten(item, f"{path}[]", out, depth + 1)
    else:
        out.append((path, value))


def flatten(value: Any) -> list[tuple[str, Any]]:
    """Leaves of a parsed argument value as ``(path, scalar or tuple of scalars)``, keys sorted.

    Example:
        >>> flatten({"filter": {"status": "open", "tags": ["a", "b"]}, "q": "x"})
        [('filter.status', 'open'), ('filter.tags', ('a', 'b')), ('q', 'x')]
        >>> flatten("just text")
        [('', 'just text')]
    """
    out: list[tuple[str, Any]] = []
    _flatten(value, "", out, 0)
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def classify(name: str, value: Any) -> Kind | None:
    """The kind of one field from its value's structure, the name breaking ties; ``None`` for
    an absent value (``null``, ``""``, ``[]``), which takes part in nothing.

    Structure first: a number is a knob unless named as a position (pagination) or an
    identifier/quantity (entity); text with spaces is free text unless named as an entity
    (``name``, ``address``); a token shaped like an identifier (digits, inner ``-_/.@:``, a
    URL or path) or a proper noun is an entity; a lower-case single word is an enum knob only
    when named as a knob (``sort``, ``mode``), free text when named as text (``q``), and an
    entity otherwise (``city``, ``status``, ``color``: a changed value asks something else).

    Example:
        >>> [classify(n, v) for n, v in [("limit", 10), ("page", 2), ("order_id", 4821), ("q", "paris")]]
        [<Kind.KNOB: 'knob'>, <Kind.PAGE: 'page'>, <Kind.ENTITY: 'entity'>, <Kind.TEXT: 'text'>]
        >>> [classify(n, v) for n, v in [("sort", "desc"), ("city", "oslo"), ("x", "ORD-1"), ("x", "cheap flights to rome")]]
        [<Kind.KNOB: 'knob'>, <Kind.ENTITY: 'entity'>, <Kind.ENTITY: 'entity'>, <Kind.TEXT: 'text'>]
        >>> classify("cursor", "eyJvZmZzZXQiOjIwfQ"), classify("from", "LHR"), classify("from", 40)
        (<Kind.PAGE: 'page'>, <Kind.ENTITY: 'entity'>, <Kind.PAGE: 'page'>)
    """
    name = normalise_name(name.rsplit(".", 1)[-1].rstrip("[]")) if name else ""
    plain = name[:-1] if name.endswith("_") else name
    if value is None or value == "" or value == ():
        return None
    if isinstance(value, bool):
        return Kind.KNOB
    if isinstance(value, tuple):
        strings = [v for v in value if isinstance(v, str)]
        if strings and all(" " in s.strip() for s in strings):
            return Kind.TEXT
        if name in KNOB_NAMES and name not in ENTITY_NAMES:
            return Kind.KNOB
        return Kind.ENTITY
    if isinstance(value, str):
        s = value.strip()
        if _NUMBER.fullmatch(s) or _QUANTITY.fullmatch(s):
            value = float(_NUMBER.match(s).group())  # type: ignore[union-attr]  # "20", "1h", "500ms", "2.5k"
        else:
            if name in PAGE_NAMES or plain in PAGE_NAMES:
                if plain in AMBIGUOUS_PAGE_NAMES and (_DATEISH.search(s) or not _OPAQUE.fullmatch(s)):
                    return Kind.ENTITY  # {"from": "LHR"}, {"after": "2024-05-01"}
                return Kind.PAGE
            if name in TEXT_NAMES:
                return Kind.TEXT
            if name not in KNOB_NAMES and name not in ENTITY_NAMES and _PAGE_NAME.search(name):
                return Kind.PAGE
            if " " not in s:
                if _IDENTIFIER.search(s):
                    return Kind.ENTITY  # ORD-1, a.pdf, /src/x.py, ann@example.com, gpt-4o
                if _ENUM_TOKEN.fullmatch(s):
                    return Kind.KNOB if name in KNOB_NAMES else Kind.ENTITY
                return Kind.ENTITY  # Paris, AAPL, Zürich: a proper noun
            if name in ENTITY_NAMES or plain in ENTITY_NAMES or _ID_NAME.search(name):
                return Kind.ENTITY  # {"address": "12 Main St"}
            words = s.split()
            if len(words) <= 3 and all(w[:1].isupper() for w in words):
                return Kind.ENTITY  # John Smith, New York
            return Kind.TEXT
    if _is_number(value):
        if name in PAGE_NAMES or plain in PAGE_NAMES:
            return Kind.PAGE
        if name in KNOB_NAMES:
            return Kind.KNOB
        if name in ENTITY_NAMES or plain in ENTITY_NAMES or _ID_NAME.search(name):
            return Kind.ENTITY
        if _PAGE_NAME.search(name):
            return Kind.PAGE
        return Kind.KNOB
    return Kind.ENTITY


_kind_cache: dict[tuple[str, Any, type], Kind | None] = {}


def argument_fields(text: str, value: Any = _UNSET) -> list[ArgField]:
    """Every field of the arguments with its kind (absent values dropped); ``value`` as for
    :func:`parse_arguments`.

    A call whose fields are all knobs has no subject for its knobs to tune: its numbers with
    no knob name are then its subject (``add(a=2, b=3)``, ``get_point(x=1, y=5)``) and count
    as entities.

    Example:
        >>> [(f.path, f.kind.value) for f in argument_fields('{"a": 2, "b": 3}')]
        [('a', 'entity'), ('b', 'entity')]
        >>> [(f.path, f.kind.value) for f in argument_fields('{"limit": 20}')]
        [('limit', 'knob')]
        >>> [(f.path, f.kind.value) for f in argument_fields('{"query": "shoes", "offset": 20, "limit": 20}')]
        [('limit', 'knob'), ('offset', 'page'), ('query', 'text')]
    """
    return [ArgField(path, kind, leaf) for path, kind, leaf in _fields(text, value)]


def _fields(text: str, value: Any) -> list[tuple[str, Kind, Any]]:
    """:func:`argument_fields` as ``(path, kind, value)`` tuples (the hot path makes no objects)."""
    value = parse_arguments(text, value)
    fields: list[tuple[str, Kind, Any]] = []
    for path, leaf in flatten(value):
        if not path:
            kind = Kind.TEXT if isinstance(leaf, str) and leaf.strip() else classify("", leaf)
        elif isinstance(leaf, (int, float)) or (isinstance(leaf, str) and len(leaf) <= 64):
            key = (path, leaf, type(leaf))
            kind = _kind_cache.get(key, _UNSET)
            if kind is _UNSET:
                kind = classify(path, leaf)
                if len(_kind_cache) >= 65_536:
                    _kind_cache.clear()
                _kind_cache[key] = kind
        else:
            kind = classify(path, leaf)
        if kind is not None:
            fields.append((path, kind, leaf))
    if fields and all(kind is Kind.KNOB for _, kind, _ in fields):
        fields = [
            (path, Kind.ENTITY, leaf)
            if not isinstance(leaf, bool) and normalise_name(path.rsplit(".", 1)[-1].rstrip("[]")) not in KNOB_NAMES
            else (path, kind, leaf)
            for path, kind, leaf in fields
        ]
    return fields


def _value_key(value: Any) -> str:
    """A field value in a canonical, case-insensitive form for fingerprints (10 == 10.0 == "10")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_number(value):
        f = float(value)
        return str(int(f)) if f.is_integer() and abs(f) < 2**63 else repr(f)
    if isinstance(value, tuple):
        return "\x1e".join(_value_key(v) for v in value)
    if isinstance(value, str):
        s = value.strip()
        if _NUMBER.fullmatch(s):
            return _value_key(float(s))
        return " ".join(unicodedata.normalize("NFKC", s).lower().split())
    return json.dumps(value, sort_keys=True, default=str)


# --------------------------------------------------------------------------- free text

# A token never ends in "." "-" ":" (the text's punctuation, not the word's): "paris." is "paris".
_TOKEN = re.compile(r"[#$@]?\w(?:[\w.\-/#@:+]*[\w/#@+])?")
_JOINED = re.compile(r"\w[\-_/.@#:+]\w")
_INNER = re.compile(r"\w[\-_/.@#:\\]\w")
_PARTS = re.compile(r"[\-_/.@#:+]+")
_POSSESSIVE = re.compile(r"(?<=\w)['’]s\b|['’]")
_VOWELS = frozenset("aeiouy")
STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "all",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "by",
        "can",
        "could",
        "do",
        "does",
        "did",
        "for",
        "from",
        "get",
        "give",
        "how",
        "i",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "show",
        "tell",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "those",
        "to",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "find",
        "search",
        "look",
        "lookup",
        "want",
        "need",
        "some",
        "much",
        "many",
        "while",
        "during",
        "through",
        "per",
        "via",
        "also",
        "just",
        "very",
        "so",
        "such",
        "too",
        "each",
        "both",
        "either",
        "again",
    ]
)
"""Words that carry no question of their own (request verbs included: find / show / look up)."""
QUERY_FILLER = frozenset(
    [
        "example",
        "examples",
        "sample",
        "samples",
        "usage",
        "use",
        "using",
        "guide",
        "guides",
        "tutorial",
        "tutorials",
        "tips",
        "tip",
        "way",
        "ways",
        "best",
        "top",
        "good",
        "rated",
        "recommendations",
        "recommendation",
        "steps",
        "instructions",
        "info",
        "information",
        "help",
        "overview",
        "explained",
        "explanation",
        "meaning",
        "options",
        "option",
        "list",
        "fix",
        "fixes",
        "error",
        "errors",
        "problem",
        "problems",
        "solution",
        "solutions",
        "solve",
        "troubleshoot",
        "troubleshooting",
    ]
)
"""Words a query adds or drops without changing what it asks ("duckdb appender python example"
/ "how to use the duckdb appender from python"): left out of the content words, like stop words."""
MARKED_WORDS = frozenset(
    [
        "today",
        "tomorrow",
        "yesterday",
        "tonight",
        "weekend",
        "weekday",
        "morning",
        "afternoon",
        "evening",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "open",
        "closed",
        "merged",
        "draft",
    ]
)
"""Lower-case words that still name *which* thing is meant (a day, a state): treated like
proper nouns by the identifier guard — "weather in paris today" / "... tomorrow" differ."""


def _skeleton(stem: str) -> str:
    """First letter + the sorted set of the other consonants: ``policy``/``polciy``, ``balance``/``blaance``."""
    return stem[0] + "".join(sorted(set(stem[1:]) - _VOWELS))


_word_cache: dict[str, tuple[int, str]] = {}


def word_key(word: str) -> tuple[int, str]:
    """``(hash, surface)`` of a lower-cased token: the hash identifies the word across calls,
    the surface is what is embedded. Plural ``s`` is dropped; a word of 6+ letters is known by
    its consonant skeleton, so transposed, doubled or dropped vowels and most typos keep the
    hash (as in v1's sketch); inflections (boil / boiling) are left to the word vectors.

    Example:
        >>> word_key("policy")[0] == word_key("polciy")[0], word_key("flights")[1]
        (True, 'flight')
        >>> word_key("shipping")[0] == word_key("shippng")[0], word_key("ord-1")[0] != word_key("ord-2")[0]
        (True, True)
    """
    hit = _word_cache.get(word)
    if hit is None:
        surface = word
        if word.isalpha():
            if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
                surface = word[:-1]
            key = "s:" + _skeleton(surface) if len(surface) >= 6 else "w:" + surface
        else:
            key = "w:" + word
        hit = (hash64(key), surface)
        if len(_word_cache) >= 50_000:
            _word_cache.clear()
        _word_cache[word] = hit
    return hit


@dataclass(frozen=True, slots=True)
class TextFeatures:
    """The stored form of a call's free text.

    ``fp``: hash of the normalised text (lower-cased word tokens); ``words``: hashes of the
    distinct content words in text order (at most :data:`MAX_WORDS`; the order tells a
    substitution in place from a rephrasing); ``ents``: the subset that are identifiers,
    proper nouns or time and polarity words (:data:`MARKED_WORDS`); ``vec``: int8 direction
    of the sum of the words' unit vectors (``None`` without a model); ``norm``: that sum's
    length.
    """

    fp: int
    words: tuple[int, ...]
    ents: tuple[int, ...]
    vec: np.ndarray | None
    norm: float


_hash_vectors: dict[int, dict[int, np.ndarray]] = {}


def _hash_vector(vectors: dict[int, np.ndarray], model: WordVectors, h: int, surface: str) -> np.ndarray:
    """The word vector of a word *hash*: the vector of the first spelling met in this process.

    Two spellings with one hash ("centre" / "center", a typo) then add the same vector to
    both calls' sums and cancel exactly in the differing-words estimate.
    """
    vector = vectors.get(h)
    if vector is None:
        vector = model.word(surface)
        if len(vectors) >= 50_000:
            vectors.clear()
        vectors[h] = vector
    return vector


@dataclass(frozen=True, slots=True)
class _Token:
    """What a token contributes, whatever its position (cached per spelling)."""

    skip: bool  # a stop word or query filler
    stop: bool  # a stop word (for the Title Case test)
    cap: bool  # starts with a capital
    parts: tuple[tuple[int, str], ...]  # (hash, surface) of the word or of its joined parts
    marked: bool  # an identifier shape or a marked word: an entity wherever it stands
    upper: bool  # ALL CAPS, 2+ letters (AAPL, USD)
    pronoun: bool  # "I"
    alpha: bool  # starts with a letter (the Title Case test reads only these)


_token_cache: dict[str, _Token] = {}


def _token(token: str) -> _Token:
    info = _token_cache.get(token)
    if info is None:
        low = token.lower()
        bare = low.strip("#$@")
        core = token.strip("#$@.,-:'")
        stop = bare in STOP_WORDS
        skip = not bare or stop or bare in QUERY_FILLER
        digit = any(c.isdigit() for c in core)
        parts: tuple[tuple[int, str], ...] = ()
        if not skip:
            # A joined token without digits (read_csv, e-bike, acme/web, ann@example.com) counts as
            # its parts: "read_csv" asks what "read csv" asks, and "acme/web" / "acme/api" still differ.
            pieces = _PARTS.split(bare) if not digit and _JOINED.search(bare) else [bare]
            parts = tuple(
                word_key(p) for p in pieces if not ((len(p) < 2 and len(pieces) > 1) or p in STOP_WORDS or not p)
            )
        info = _Token(
            skip,
            stop,
            core[:1].isupper(),
            parts,
            bool(core) and (bare in MARKED_WORDS or digit or bool(_INNER.search(core))),
            len(core) >= 2 and core.isupper(),
            core == "I",
            token[:1].isalpha(),
        )
        if len(_token_cache) >= 50_000:
            _token_cache.clear()
        _token_cache[token] = info
    return info


def text_features(text: str, model: WordVectors | None = _UNSET) -> TextFeatures:
    """Hashes, identifier set and vector of free text (see the module docstring).

    Capitals mark proper nouns only in text that is not in Title Case (a capitalised stop
    word, or three or more words after the first all capitalised): there every word would
    look like a name. One text of :func:`texts_features`.

    Example:
        >>> a = text_features("Weather in Paris", model=None)
        >>> b = text_features("paris weather", model=None)
        >>> set(a.words) == set(b.words) and len(a.ents) == 1 and b.ents == ()
        True
        >>> text_features("Refund Policy For Damaged Items?", model=None).ents
        ()
    """
    return texts_features([text], model)[0]


def texts_features(texts: Sequence[str], model: WordVectors | None = _UNSET) -> list[TextFeatures]:
    """:func:`text_features` of many texts at once (cached by text, each distinct text computed
    once): their words in Python, then every text's vector in a few numpy operations.

    Example:
        >>> [f.words == text_features(t, model=None).words for f, t in
        ...  zip(texts_features(["cheap flights", "Oslo weather"], model=None), ["cheap flights", "Oslo weather"])]
        [True, True]
    """
    if model is _UNSET:
        model = default_model()
    return _cached(texts, model, _text_cache, lambda fresh: _texts_features(list(fresh), model))


_text_cache: dict[tuple[str, int], TextFeatures] = {}


def _cached(items: Sequence[str], model: WordVectors | None, cache: dict[tuple[str, int], T], compute: Any) -> list[T]:
    """``items``' values from ``cache`` by ``(item, model)``; the others by ``compute(fresh)``,
    ``fresh`` mapping each distinct missing item to its positions, in the order of first use."""
    key = id(model)
    out: list[Any] = [None] * len(items)
    fresh: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        hit = cache.get((item, key))
        if hit is not None:
            out[i] = hit
        elif item in fresh:
            fresh[item].append(i)
        else:
            fresh[item] = [i]
    if fresh:
        for (item, positions), value in zip(fresh.items(), compute(fresh), strict=True):
            if len(cache) >= CALL_CACHE_LIMIT:
                cache.clear()
            cache[(item, key)] = value
            for i in positions:
                out[i] = value
    return out


def _text_words(text: str) -> tuple[int, dict[int, str], set[int]]:
    """The hash of a text's normalised tokens, its content words (hash → surface, text order)
    and the hashes of those that are entities."""
    text = text[:MAX_CHARS]
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    if "'" in text or "’" in text:
        text = _POSSESSIVE.sub("", text)  # tomorrow's → tomorrow, don't → dont
    tokens = _TOKEN.findall(text)
    cached = _token_cache.get
    infos = [cached(t) or _token(t) for t in tokens]
    later = [info for info in infos[1:] if info.alpha]
    ignore_case = any(i.cap and i.stop for i in later) or (len(later) >= 3 and all(i.cap for i in later))
    words: dict[int, str] = {}
    ents: set[int] = set()
    for n, info in enumerate(infos):
        if info.skip:
            continue
        entity = info.marked or (not ignore_case and (info.upper or (info.cap and n > 0 and not info.pronoun)))
        for h, surface in info.parts:
            if h not in words:
                if len(words) >= MAX_WORDS:
                    continue
                words[h] = surface
            if entity:
                ents.add(h)
    return hash64("t", " ".join(tokens).lower()), words, ents


def _texts_features(texts: list[str], model: WordVectors | None) -> list[TextFeatures]:
    """The features of distinct texts not cached: words one text at a time, vectors all at once.

    Each text's vector is the sum of its words' vectors in text order, rotated and quantised;
    done for all texts together it is added up the same way (one word position at a time over
    every text, shorter texts padded with a zero vector), so every figure is the one a text
    alone gets to the bit.
    """
    lexical = [_text_words(t) for t in texts]
    vecs: list[np.ndarray | None] = [None] * len(texts)
    norms = [0.0] * len(texts)
    if model is not None:
        import numpy as np

        vectors = _hash_vectors.setdefault(id(model), {})
        table: list[np.ndarray] = [np.zeros(model.dims, np.float32)]  # row 0 pads the shorter texts
        row_of: dict[int, int] = {}  # id of a word vector → its row in the table
        flat: list[int] = []  # every worded text's rows, one text after the other
        counts: list[int] = []
        worded: list[int] = []
        for i, (_, words, _) in enumerate(lexical):
            if not words:
                continue
            for h, w in words.items():
                vector = vectors.get(h)
                if vector is None:
                    vector = _hash_vector(vectors, model, h, w)
                row = row_of.get(id(vector))
                if row is None:
                    row = row_of[id(vector)] = len(table)
                    table.append(vector)
                flat.append(row)
            counts.append(len(words))
            worded.append(i)
        if worded:
            width = max(counts)
            lengths = np.array(counts, np.intp)
            starts = np.cumsum(lengths) - lengths
            padded = np.zeros((len(counts), width), np.intp)  # row 0 where a text has no more words
            text_of = np.repeat(np.arange(len(counts)), lengths)
            padded[text_of, np.arange(len(flat)) - starts[text_of]] = flat
            words_at = np.stack(table)[padded]
            total = words_at[:, 0]
            for k in range(1, width):
                total = total + words_at[:, k]  # as np.add.reduce adds one text's words: in order
            if _ROTATION is not None and total.shape[1] == _ROTATION.shape[0]:
                total = np.matmul(_ROTATION, total[:, :, None])[:, :, 0]  # one matrix-vector product each
            squares = np.matmul(total[:, None, :], total[:, :, None])[:, 0, 0]  # one dot product each
            peaks = np.abs(total).max(axis=1).astype(np.float64)
            scales = np.divide(127.0, peaks, out=np.zeros_like(peaks), where=peaks != 0).astype(np.float32)
            quantised = np.rint(total * scales[:, None]).astype(np.int8)
            for i, vec, square in zip(worded, quantised, squares.tolist(), strict=True):
                vecs[i] = vec
                norms[i] = math.sqrt(square)
    return [
        TextFeatures(fp, tuple(words), tuple(sorted(ents)), vec, norm)
        for (fp, words, ents), vec, norm in zip(lexical, vecs, norms, strict=True)
    ]


# --------------------------------------------------------------------------- per call


@dataclass(frozen=True, slots=True)
class CallFeatures:
    """The argument features of one tool call; :meth:`columns` is what is stored.

    ``frame``: hash of the sorted ``path:kind`` of the entity, pagination and text fields
    with the entities' and pages' values (knobs may come and go), 0 for arguments with no
    field at all (nothing to compare); ``text``: the free-text features or ``None``. The knobs
    leave no trace: a knob may change in a repeat.
    """

    frame: int
    text: TextFeatures | None

    def columns(self) -> dict[str, Any]:
        """The stored columns (``loopsight.model.SPANS``).

        Example:
            >>> sorted(call_features('{"q": "x"}', model=None).columns())
            ['args_ents', 'args_frame', 'args_text_fp', 'args_vec', 'args_vec_norm', 'args_words']
        """
        t = self.text
        return {
            "args_frame": self.frame,
            "args_text_fp": t.fp if t else None,
            "args_words": list(t.words) if t else None,
            "args_ents": list(t.ents) if t else None,
            "args_vec": t.vec.tolist() if t is not None and t.vec is not None else None,
            "args_vec_norm": t.norm if t is not None and t.vec is not None else None,
        }


_call_cache: dict[tuple[str, int], CallFeatures] = {}
CALL_CACHE_LIMIT = 16_384


def call_features(text: str, model: WordVectors | None = _UNSET) -> CallFeatures:
    """The features of one call's raw argument text (cached by text: loops repeat it); one call
    of :func:`calls_features`.

    Example:
        >>> f = call_features('{"customer": "cust-1", "page": 2}', model=None)
        >>> f.frame != call_features('{"customer": "cust-1", "page": 3}', model=None).frame, f.text is None
        (True, True)
    """
    return calls_features([text], model)[0]


def calls_features(
    texts: Sequence[str], model: WordVectors | None = _UNSET, values: Sequence[Any] | None = None
) -> list[CallFeatures]:
    """:func:`call_features` of many calls at once, e.g. the tool calls of one request: each
    distinct text is read once, and the free texts of all of them go through
    :func:`texts_features` together. ``values``: each text's ``json.loads`` when the caller has
    parsed it already (:data:`NOT_JSON` where that raised).

    Example:
        >>> texts = ['{"q": "orders", "limit": 10}', '{"q": "orders", "limit": 11}', '{"q": "orders", "limit": 10}']
        >>> a, b, c = calls_features(texts, model=None)
        >>> a is c and a.frame == b.frame and a == call_features(texts[0], model=None)
        True
    """
    if model is _UNSET:
        model = default_model()

    def compute(fresh: dict[str, list[int]]) -> list[CallFeatures]:
        parts = [_call_fields(text, values[at[0]] if values is not None else _UNSET) for text, at in fresh.items()]
        joined = [free for *_, free in parts if free is not None]
        free_features = iter(texts_features(joined, model))
        return [CallFeatures(frame, next(free_features) if free is not None else None) for frame, free in parts]

    return _cached(texts, model, _call_cache, compute)


_KIND_SUFFIX = {kind: ":" + kind.value for kind in Kind}


def _call_fields(text: str, value: Any) -> tuple[int, str | None]:
    """A call's ``frame`` (:class:`CallFeatures`) and its free text (the text fields joined;
    ``None`` when it has none)."""
    fields = _fields(text, value)
    shape: list[str] = []
    entities: list[str] = []
    pages: list[str] = []
    texts: list[Any] = []
    for path, kind, leaf in fields:
        if kind is Kind.KNOB:
            continue
        shape.append(path + _KIND_SUFFIX[kind])
        if kind is Kind.TEXT:
            texts.append(leaf)
        else:
            (entities if kind is Kind.ENTITY else pages).append(f"{path}={_value_key(leaf)}")
    joined = None
    if texts:
        joined = " \n ".join(" ".join(map(str, v)) if isinstance(v, tuple) else str(v) for v in texts)
    return (
        hash64("frame", *sorted(shape), "\x1e", *sorted(entities), "\x1e", *sorted(pages)) if fields else 0,
        joined,
    )


def clear_caches() -> None:
    """Forget cached calls and words (benchmarks measure cache misses with it)."""
    _call_cache.clear()
    _text_cache.clear()
    _word_cache.clear()
    _token_cache.clear()
    _hash_vectors.clear()
    _kind_cache.clear()


NEAR_PARAMETERS: dict[str, float] = {
    "cos_min": 0.50,  # least cosine of two texts' word-vector sums for a paraphrase
    "word_min": 0.35,  # least estimated cosine of the words swapped in place: synonyms, not other things
    "max_sub": 2,  # a difference of at most this many words a side is a substitution (guarded)
    "cross": 0.10,  # assumed cosine of two different words of one side, in the swapped-words estimate
    "long_words": 12,  # texts with this many content words (documents, code) must also share words:
    "long_jaccard": 0.5,  # at least this Jaccard overlap of their word hashes
}
"""The near test's constants (``stores/sql/loops_core.sql``); the best F1 on 69 hand-written
pairs apart from the labelled corpus (docs/detection.md)."""
