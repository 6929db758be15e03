"""A 64-bit similarity sketch of tool-argument text, computed at ingest instead of keeping the text.

Layout (most significant bits first):

* bits 63..48 — an exact 16-bit fingerprint of the *identifier tokens* (any token holding a
  digit or longer than 15 characters: page numbers, offsets, ids, dates, cursors), 0 when
  there are none. Calls whose identifiers differ (page 2 vs page 3) are never near.
* bit 47 — the mode: 0 for short text (at most :data:`MAX_SET_WORDS` content words), 1 for long.
* short text: bits 46..44 the number of distinct content words (stop words dropped), bits
  43..0 a Bloom-style set of them: each word's *skeleton* (plural ``s``, vowels, doubled
  letters and letter order removed, so most typos keep it) sets 2 of 44 bits.
* long text: bits 39..0 a SimHash of the character 3-grams of the content words.

:func:`near` is the test the loop detector applies (also written in SQL in
``analytics/sql/loops_core.sql``): same identifiers and mode; for short text the same word
set (reordered, re-cased, re-punctuated, stop words added, most typos) or one word more on
one side (the smaller set inside the larger) — a different word in place of another (Paris
→ Berlin) is not near; for long text at most :data:`NEAR_BITS_LONG` differing SimHash bits.

Example:
    >>> a = sketch('{"query": "refund policy for 2024 orders"}')
    >>> near(a, sketch('{"query": "orders 2024 refund policy"}'))
    True
    >>> near(a, sketch('{"query": "Refund polcy for 2024 orders?"}'))
    True
    >>> near(sketch("flights to paris next week"), sketch("flights to berlin next week"))
    False
    >>> near(sketch('{"q": "shoes", "page": 2}'), sketch('{"q": "shoes", "page": 3}'))
    False
"""

from __future__ import annotations

import re
import unicodedata
from typing import cast

ID_SHIFT = 48
SIMHASH_MODE = 1 << 47
COUNT_SHIFT = 44
SET_BITS = 44
SET_MASK = (1 << SET_BITS) - 1
SIMHASH_BITS = 40
MAX_SET_WORDS = 7
MAX_WORD_CHARS = 15
NEAR_BITS_LONG = 7
MAX_CHARS = 2048
_VOWELS = frozenset("aeiouy")

_LANE = 16  # bits per counter lane of the packed sum (counts up to 32767 n-grams)
_LANE_MASK = (1 << _LANE) - 1
_JSON_KEY = re.compile(r'"[^"]*"\s*:')
_WORD = re.compile(r"[^\W_]+")
_SPREAD = [sum(((byte >> bit) & 1) << (bit * _LANE) for bit in range(8)) for byte in range(256)]
_gram_cache: dict[str, int] = {}
STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "could",
        "do",
        "does",
        "for",
        "from",
        "get",
        "how",
        "i",
        "in",
        "into",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "please",
        "show",
        "tell",
        "than",
        "that",
        "the",
        "this",
        "to",
        "was",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)
_CACHE_LIMIT = 65_536


def _mix64(x: int) -> int:
    # splitmix64 finaliser: a stable, well-spread 64-bit hash (Python's hash() is salted per process).
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


def _gram_vector(gram: str) -> int:
    """The gram's 48 hash bits spread one per 16-bit lane, so summing vectors counts bits per lane."""
    vector = _gram_cache.get(gram)
    if vector is None:
        h = _mix64(int.from_bytes(gram.encode("utf-8", "surrogatepass"), "little"))
        vector = 0
        for i in range(SIMHASH_BITS // 8):
            vector |= _SPREAD[(h >> (8 * i)) & 0xFF] << (8 * _LANE * i)
        if len(_gram_cache) >= _CACHE_LIMIT:
            _gram_cache.clear()
        _gram_cache[gram] = vector
    return vector


def _majority(total: int, count: int) -> int:
    """Bit i of the result is 1 when lane i of ``total`` holds more than ``count / 2``."""
    # Adding (2**15 - 1 - count // 2) to every lane sets a lane's top bit exactly when it exceeds count // 2.
    bias = (1 << (_LANE - 1)) - 1 - count // 2
    total += bias * _REPLICATE
    top_bytes = total.to_bytes(SIMHASH_BITS * _LANE // 8, "little")[1::2]
    return int(top_bytes.translate(_TOP_BIT)[::-1], 2)


_REPLICATE = sum(1 << (_LANE * i) for i in range(SIMHASH_BITS))
_TOP_BIT = bytes.maketrans(bytes(range(256)), bytes(ord("1") if b & 0x80 else ord("0") for b in range(256)))


def _identifier_fingerprint(tokens: list[str]) -> int:
    if not tokens:
        return 0
    h = 0
    for token in sorted(set(tokens)):
        h = _mix64(h ^ int.from_bytes(token.encode("utf-8", "surrogatepass")[:64], "little"))
    return (h & 0xFFFF) or 1


def _skeleton(word: str) -> str:
    # Plural s, vowels, doubled letters and letter order do not change a word's skeleton, so
    # most typos (transposed, doubled or dropped vowels) keep it.
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[0] + "".join(sorted(set(word[1:]) - _VOWELS))


def _word_bits(words: set[str]) -> int:
    bits = 0
    for word in words:
        h = _mix64(int.from_bytes(_skeleton(word).encode("utf-8", "surrogatepass")[:64], "little"))
        bits |= (1 << (h % SET_BITS)) | (1 << ((h >> 32) % SET_BITS))
    return bits


def sketch(text: str) -> int:
    """The 64-bit sketch of argument text (JSON or free text); 0 for text with no words.

    Example:
        >>> sketch("") == 0
        True
        >>> sketch('{"city": "Paris"}') == sketch('{"city":"paris"}')
        True
    """
    text = _JSON_KEY.sub(" ", unicodedata.normalize("NFKC", text[:MAX_CHARS]).lower())
    words = _WORD.findall(text)
    alpha = {w for w in words if w.isalpha() and len(w) <= MAX_WORD_CHARS and w not in STOP_WORDS}
    ids = _identifier_fingerprint([w for w in words if not w.isalpha() or len(w) > MAX_WORD_CHARS]) << ID_SHIFT
    if not alpha:
        return ids
    if len(alpha) <= MAX_SET_WORDS:
        return ids | (len(alpha) << COUNT_SHIFT) | _word_bits(alpha)
    # Words joined by two spaces: every 3-gram then lies inside one padded word, so word order is ignored.
    joined = "  " + "  ".join(alpha) + "  "
    grams = {joined[i : i + 3] for i in range(len(joined) - 2)}
    cached = list(map(_gram_cache.get, grams))
    vectors: list[int] = list(map(_gram_vector, grams)) if None in cached else cast("list[int]", cached)
    return ids | SIMHASH_MODE | _majority(sum(vectors), len(grams))


def distance(a: int, b: int) -> int:
    """Payload bits that differ, or 64 when the identifiers or the modes differ.

    Example:
        >>> distance(sketch("refund policy"), sketch("refund policy"))
        0
    """
    if (a >> 47) != (b >> 47):
        return 64
    return (a ^ b).bit_count()


def near(a: int, b: int) -> bool:
    """Whether two sketches are near-duplicates (the semantic-loop test, also in ``loops_core.sql``).

    Example:
        >>> near(sketch("weather in Paris today"), sketch("weather today in paris"))
        True
        >>> near(sketch("weather in Paris today"), sketch("weather in Paris"))
        True
    """
    if not a or not b or (a >> 47) != (b >> 47):
        return False
    if a & SIMHASH_MODE:
        return (a ^ b).bit_count() <= NEAR_BITS_LONG
    count_a, count_b = (a >> COUNT_SHIFT) & 7, (b >> COUNT_SHIFT) & 7
    if count_a == count_b:
        return a == b
    if abs(count_a - count_b) != 1:
        return False
    # one word more on one side: the smaller word set lies inside the larger
    small, large = (a, b) if count_a < count_b else (b, a)
    return small & large & SET_MASK == small & SET_MASK
