"""The tool-argument similarity sketch (:mod:`loopsight.ingest.sketch`) as a ClickHouse expression.

Spans the OpenTelemetry Collector's exporter writes keep their raw arguments in
``SpanAttributes``, so ``otel_traces.loopsight_args_sketch`` computes the sketch at insert
with the same steps and constants as :func:`loopsight.ingest.sketch.sketch`:

1. first 2,048 characters, NFKC, lower case, JSON keys (``"key":``) replaced by a space;
2. words ``[\\pL\\pN]+`` (Python's ``[^\\W_]+``); alphabetic words of at most 15 characters
   that are not stop words form the word set, every other word is an identifier token;
3. bits 63..48: the 16-bit fingerprint of the sorted distinct identifier tokens (a fold of
   splitmix64 over each token's first 8 UTF-8 bytes, little-endian, as ``int.from_bytes``
   then the 64-bit mask give);
4. at most 7 words: their count << 44 and, per word skeleton, 2 of 44 bits;
   more: bit 47 and a 40-bit SimHash (majority per bit) of the words' padded character 3-grams.

Only the low 64 bits of ``int.from_bytes(...)`` reach splitmix64's result, which is why the
first 8 bytes are enough (``reinterpretAsUInt64`` of the text, zero-padded).

Known differences (none for ASCII text): Python's ``str.lower`` and ``\\s`` follow full
Unicode where ClickHouse's ``lowerUTF8`` and RE2's ``\\s`` do not always (``İ``, vertical
tab in a JSON key's spacing).

Example:
    >>> "normalizeUTF8NFKC" in sketch_sql("t")
    True
"""

from __future__ import annotations

from loopsight.ingest import sketch as S

_K1, _K2, _K3 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_VOWELS = "[" + ",".join(f"'{v}'" for v in sorted(S._VOWELS)) + "]"
_STOP = "[" + ",".join(f"'{w}'" for w in sorted(S.STOP_WORDS)) + "]"


def _bind(name: str, value: str, body: str) -> str:
    """``body`` with ``name`` bound to ``value`` once (ClickHouse has no let: a one-element arrayMap)."""
    return f"arrayMap({name} -> {body}, [{value}])[1]"


def mix64_sql(x: str, tag: str) -> str:
    """splitmix64's finaliser (``sketch._mix64``) on a UInt64 expression; ``tag`` keeps lambda names apart."""
    a, b, c = f"m1{tag}", f"m2{tag}", f"m3{tag}"
    return _bind(
        a,
        f"toUInt64({x}) + toUInt64({_K1})",
        _bind(
            b,
            f"bitXor({a}, bitShiftRight({a}, 30)) * toUInt64({_K2})",
            _bind(c, f"bitXor({b}, bitShiftRight({b}, 27)) * toUInt64({_K3})", f"bitXor({c}, bitShiftRight({c}, 31))"),
        ),
    )


def _le64(text: str) -> str:
    return f"reinterpretAsUInt64({text})"


def _skeleton(word: str) -> str:
    stem = (
        f"if(lengthUTF8({word}) > 3 AND endsWith({word}, 's') AND NOT endsWith({word}, 'ss'), "
        f"substring({word}, 1, length({word}) - 1), {word})"
    )
    return _bind(
        "sk",
        stem,
        f"concat(substringUTF8(sk, 1, 1), arrayStringConcat(arraySort(arrayDistinct("
        f"arrayFilter(ch -> NOT has({_VOWELS}, ch), ngrams(substringUTF8(sk, 2), 1))))))",
    )


def sketch_sql(text: str) -> str:
    """A UInt64 expression equal to ``sketch(text)`` for the String expression ``text``.

    Example:
        >>> sketch_sql("assumeNotNull(raw)").startswith("arrayMap(")
        True
    """
    cleaned = (
        f"replaceRegexpAll(lowerUTF8(normalizeUTF8NFKC(substringUTF8({text}, 1, {S.MAX_CHARS}))), "
        "'\"[^\"]*\"\\\\s*:', ' ')"
    )
    is_word = f"(match(w, '^\\\\pL+$') AND lengthUTF8(w) <= {S.MAX_WORD_CHARS})"
    ids = f"if(empty(idt), toUInt64(0), bitShiftLeft(toUInt64(if(bitAnd(idh, 65535) = 0, 1, bitAnd(idh, 65535))), {S.ID_SHIFT}))"
    step = mix64_sql(f"bitXor(acc, {_le64('tok')})", "i")
    fold = f"arrayFold((acc, tok) -> {step}, idt, toUInt64(0))"
    word_bits = (
        f"arrayReduce('groupBitOr', arrayMap(wh -> bitOr(bitShiftLeft(toUInt64(1), wh % {S.SET_BITS}), "
        f"bitShiftLeft(toUInt64(1), bitShiftRight(wh, 32) % {S.SET_BITS})), "
        f"arrayMap(w -> {mix64_sql(_le64(_skeleton('w')), 'w')}, alpha)))"
    )
    grams = "arrayDistinct(arrayFlatten(arrayMap(w -> ngrams(concat('  ', w, '  '), 3), alpha)))"
    simhash = _bind(
        "hs",
        f"arrayMap(g -> {mix64_sql(_le64('g'), 'g')}, {grams})",
        f"arraySum(arrayMap(i -> bitShiftLeft(toUInt64(arrayCount(h -> bitTest(h, i), hs) > intDiv(length(hs), 2)), i), "
        f"range({S.SIMHASH_BITS})))",
    )
    payload = (
        f"multiIf(empty(alpha), toUInt64(0), length(alpha) <= {S.MAX_SET_WORDS}, "
        f"bitOr(bitShiftLeft(toUInt64(length(alpha)), {S.COUNT_SHIFT}), {word_bits}), "
        f"bitOr(toUInt64({S.SIMHASH_MODE}), {simhash}))"
    )
    return _bind(
        "words",
        f"extractAll({cleaned}, '[\\\\pL\\\\pN]+')",
        _bind(
            "alpha",
            f"arrayDistinct(arrayFilter(w -> {is_word} AND NOT has({_STOP}, w), words))",
            _bind(
                "idt",
                f"arraySort(arrayDistinct(arrayFilter(w -> NOT {is_word}, words)))",
                _bind("idh", fold, f"bitOr({ids}, {payload})"),
            ),
        ),
    )
