"""A varied corpus of tool-call argument and result texts, and what ingest stores of each.

Used by ``test_feature_batch.py`` to check that the batched feature pass stores what the
per-call pass of ``f18a2b4`` stored (``feature_golden.json``: a digest of each row, written by
``python feature_corpus.py feature_golden.json`` in this folder with that revision's package first
on ``PYTHONPATH``, e.g. the tree ``bench/bench_ingest_ab.py``'s ``baseline_tree`` lays out), and that
batches of any size and order give each call the same features.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from typing import Any

_TEXT = (
    "refund policy damaged items order shipping times canada cheap flights london tokyo weather forecast "
    "paris oslo python duckdb appender usage example kubernetes pod pending state git undo last commit "
    "Zürich São Paulo naïve café ﬁle Ｆｕｌｌｗｉｄｔｈ 東京 天気 emoji 🙂 tomorrow's don't O'Brien ORD-1042 "
    "a.pdf /src/x.py ann@example.com gpt-4o read_csv e-bike acme/web #tag @user $AAPL USD I The Of"
)
WORDS = _TEXT.split()
KEY = b"feature-corpus-key-0123456789abc"


def argument_texts(n: int = 1500, seed: int = 11) -> list[str]:
    """Argument texts: JSON of every shape, wrappers, double-encoded, non-JSON, malformed,
    unicode, empty, huge and deeply nested ones, and repeats."""
    rng = random.Random(seed)
    fixed = [
        "",
        " ",
        "null",
        "true",
        "0",
        "-0.0",
        "1e400",
        "NaN",
        "[]",
        "{}",
        '""',
        '"   "',
        "12345678901234567890123",
        '{"n": 12345678901234567890123, "q": "big numbers"}',
        '{"q": "\\ud800 lone surrogate"}',
        '{"q": "x"',
        "{'q': 'python dict'}",
        '{"q": "a"} trailing',
        "weather in oslo",
        "Weather In Oslo Tomorrow",
        "find the refund policy for damaged items, please",
        '"{\\"city\\": \\"Oslo\\"}"',
        '"[1, 2, 3]"',
        '{"args": [], "kwargs": {"q": "x"}}',
        '{"args": ["a.pdf"], "kwargs": {"mode": "r"}}',
        '{"args": ["only args"]}',
        '{"arguments": {"city": "Paris", "days": 3}}',
        '{"parameters": {"query": "tokyo weather"}}',
        '{"a": 2, "b": 3}',
        '{"limit": 20}',
        '{"query": "shoes", "offset": 20, "limit": 20}',
        '{"cursor": "eyJvZmZzZXQiOjIwfQ", "q": "orders"}',
        '{"from": "LHR", "to": "JFK", "after": "2024-05-01"}',
        '{"from": 40, "page": 2.0, "start": "abcDEF123=="}',
        '{"filter": {"status": "open", "tags": ["a", "b"]}, "q": "x"}',
        '{"items": [{"id": 1, "q": "one"}, {"id": 2, "q": "two"}]}',
        '{"q": ["multi word text", "another query"]}',
        '{"q": null, "limit": [], "x": ""}',
        '{"temperature": 0.7, "top_p": 1e-5, "seed": 1e16, "k": true}',
        '{"" : "empty key", "a.b": {"c": 1}}',
        '{"1": "numeric key", "maxResults": 5, "page-token": "tok_ABC123xyz"}',
        json.dumps({"q": "x" * 3000}),
        json.dumps({"q": " ".join(WORDS) * 20}),
        "word " * 1000,
        json.dumps({f"k{i}": i for i in range(100)}),
        json.dumps({"q": "deep", "d": _deep(12)}),
        "[" * 3000 + "]" * 3000,
        '{"a": ' * 2000 + "1" + "}" * 2000,
        json.dumps({"q": "unicode ﬁle Ｆｕｌｌ 東京 🙂"}, ensure_ascii=False),
        json.dumps({"q": "unicode ﬁle Ｆｕｌｌ 東京 🙂"}),
        json.dumps({"text": "Summarise the complaint about order A-1042 from Rotterdam on Tuesday."}),
    ]
    out = list(fixed)
    while len(out) < n:
        kind = rng.random()
        words = rng.sample(WORDS, rng.randint(1, 9))
        if kind < 0.45:
            args: dict[str, Any] = {rng.choice(("query", "q", "question", "text", "title")): " ".join(words)}
            if rng.random() < 0.4:
                args[rng.choice(("limit", "top_k", "page", "offset", "sort"))] = rng.choice((5, 10, 2.5, "desc", "20"))
            if rng.random() < 0.3:
                args[rng.choice(("order_id", "city", "user", "path"))] = rng.choice(words)
            text = json.dumps(args, ensure_ascii=rng.random() < 0.5)
        elif kind < 0.6:
            text = " ".join(words)  # not JSON
        elif kind < 0.7:
            text = json.dumps({"kwargs": {"q": " ".join(words)}, "args": rng.choice(([], [1], None))})
        elif kind < 0.8:
            text = json.dumps(json.dumps({"query": " ".join(words)}))  # double-encoded
        elif kind < 0.9:
            text = json.dumps({"outer": {"inner": {"q": " ".join(words), "n": rng.randint(0, 9)}}})[
                : rng.randint(5, 60)
            ]
        else:
            text = rng.choice(out)  # a repeat (a loop)
        out.append(text)
    return out


def _deep(n: int) -> Any:
    value: Any = {"leaf": "bottom of the nest"}
    for i in range(n):
        value = {f"level{i}": value, "n": i}
    return value


def result_texts(n: int = 600, seed: int = 12) -> list[str | None]:
    """Result texts: JSON pages with and without volatile fields, prose, acknowledgements,
    status words, JSON-encoded strings, short, long and unicode ones."""
    rng = random.Random(seed)
    fixed: list[str | None] = [
        None,
        "",
        "true",
        '{"status": "ok"}',
        "No results found.",
        "The file has been uploaded to your workspace.",
        '"The file has been uploaded to your workspace, and the owner was told about it by mail."',
        '{"hits": 3, "took": 12, "q": "refund policy for damaged items"}',
        '{"hits": 3, "took": 40, "q": "refund policy for damaged items"}',
        '{\\"requestId\\": \\"x\\", \\"q\\": \\"escaped keys in a json string of some length\\"}',
        json.dumps(json.dumps({"request_id": "r-1", "answer": "an answer long enough to be kept as it is"})),
        "<html><body>Saved.</body></html> and some more text to pass the length",
        json.dumps({"took": 5, "hits": [{"title": "x" * 40}] * 20}),
        json.dumps({"hits": [{"title": "x" * 40}] * 20, "took": 5}),
        "é" * 600,
        "Ａ ｂｉｇ ｒｅｓｕｌｔ " * 10,
        "x" * 9000,
        '{"unterminated": "json with enough characters to be long enough to count"',
    ]
    out = list(fixed)
    while len(out) < n:
        words = rng.sample(WORDS, rng.randint(3, 12))
        kind = rng.random()
        if kind < 0.5:
            page: dict[str, Any] = {
                "query": " ".join(words),
                "hits": [{"title": w, "score": rng.random()} for w in words],
            }
            if rng.random() < 0.4:
                page[rng.choice(("took", "timestamp", "requestId", "elapsed_ms"))] = rng.randint(1, 999)
            out.append(json.dumps(page, ensure_ascii=rng.random() < 0.5))
        elif kind < 0.8:
            out.append(" ".join(words) + ".")
        else:
            out.append(rng.choice(out))
    return out


def stored(arguments: list[str], results: list[str | None]) -> dict[str, Any]:
    """What ingest stores of each text, computed one call at a time with the public per-call
    functions (present at every revision since detection v2)."""
    from loopsight.ingest import features
    from loopsight.ingest.arguments import call_arguments
    from loopsight.ingest.normalize import args_hash_of_text
    from loopsight.results import result_hash

    features.set_hash_key(KEY)
    features.clear_caches()
    rows = []
    for text in arguments:
        canonical = call_arguments(text)
        f = features.call_features(canonical)
        rows.append([canonical, args_hash_of_text(canonical), f.frame, f.columns()])
    return {"arguments": rows, "results": [result_hash(r) for r in results]}


def digests(table: dict[str, Any]) -> dict[str, list[str]]:
    """A short digest of each row of :func:`stored` (what the golden file keeps)."""
    return {
        name: [hashlib.sha256(json.dumps(row, ensure_ascii=True).encode()).hexdigest()[:16] for row in rows]
        for name, rows in table.items()
    }


if __name__ == "__main__":
    with open(sys.argv[1], "w") as out:
        json.dump(digests(stored(argument_texts(), result_texts())), out, indent=0)
        out.write("\n")
