"""The argument sketch on ClickHouse is ``loopsight.ingest.sketch.sketch``, bit for bit."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loopsight.ingest import sketch as S
from loopsight.ingest.pipeline import prepare
from loopsight.stores.clickhouse_sketch import sketch_sql
from loopsight.stores.clickhouse_writer import ClickHouseWriter

CURATED = [
    "",
    "a the of",
    "12345",
    '{"city": "Paris"}',
    '{"city":"paris"}',
    "flights to paris next week",
    "flights to berlin next week",
    '{"query": "refund policy for 2024 orders"}',
    '{"query": "Refund polcy for 2024 orders?"}',
    '{"q": "shoes", "page": 2}',
    "one two three four five six seven eight nine ten eleven",
    "Ünïcode café naïve résumé",
    "Привет мир как дела",
    "supercalifragilisticexpialidocious word",
    "ﬁancée ﬂights",
    "x" * 3000,
    "mixed_underscore_words and-dashes",
    "日本語のテキスト",
    "boss glasses dogs cats",
    '{"a": {"b": "nested value here"}, "c": [1, 2, 3]}',
    "tab\tseparated\nlines",
    " ".join(["long"] * 50 + ["tail", "words", "beyond", "the", "limit", "of", "seven", "distinct"]),
]
WORDS = [
    "refund",
    "policy",
    "orders",
    "paris",
    "berlin",
    "weather",
    "today",
    "shoes",
    "cheap",
    "flight",
    "hotel",
    "book",
    "search",
    "query",
    "page",
    "the",
    "for",
    "a",
    "2024",
    "id_9",
    "x1",
    "zzzzzzzzzzzzzzzzz",
    "naïve",
    "straße",
]


def _corpus() -> list[str]:
    rnd = random.Random(11)
    texts = list(CURATED)
    for _ in range(400):
        text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 16)))
        texts.append(json.dumps({"q": text, "n": rnd.randint(0, 99)}) if rnd.random() < 0.5 else text)
    return texts


def test_the_sql_sketch_equals_the_python_sketch(clickhouse: Any) -> None:
    texts = _corpus()
    got = dict(
        clickhouse.execute(
            f"SELECT t, {sketch_sql('t')} FROM (SELECT arrayJoin({{texts:Array(String)}}) AS t)", {"texts": texts}
        ).fetchall()
    )
    expected = {t: S.sketch(t) for t in texts}
    assert {t: got[t] for t in texts} == expected
    assert len(set(expected.values())) > 100 and any(v & S.SIMHASH_MODE for v in expected.values())


def test_the_loop_sql_uses_the_module_constants() -> None:
    sql = (Path(S.__file__).parent / "sql" / "clickhouse" / "loops_core.sql").read_text()
    body = sql.split("sketched AS (", 1)[1].split("semantic_sketch AS (", 1)[0]
    assert {int(n) for n in re.findall(r"\b\d{4,}\b", body)} == {S.SIMHASH_MODE, S.SET_MASK}
    assert set(re.findall(r"bitShiftRight\(\w+_sketch, (\d+)\)", body)) == {"47", str(S.COUNT_SHIFT)}
    assert set(re.findall(r"bitCount\(bitXor\(args_sketch, \w+\)\) <= (\d+)", body)) == {str(S.NEAR_BITS_LONG)}


def test_sketches_match_duckdb_whoever_writes(
    clickhouse: Any, duck: Any, new_clickhouse: Callable[[], Any], fixture_request: Any
) -> None:
    """Exporter rows compute it from raw arguments; the loopsight writer (raw arguments dropped) keeps its own."""
    query = "SELECT SpanId, args_sketch FROM spans WHERE args_sketch IS NOT NULL ORDER BY SpanId"
    expected = duck.execute(query).fetchall()
    assert len(expected) >= 12
    assert clickhouse.execute(query).fetchall() == expected
    writer = ClickHouseWriter(new_clickhouse())
    try:
        writer.submit(prepare(fixture_request).table).result(timeout=60)
        reader = writer.reader()
        assert reader.execute(
            "SELECT count() FROM otel_traces WHERE mapContains(SpanAttributes, 'gen_ai.tool.call.arguments')"
        ).fetchall() == [(0,)]
        assert reader.execute(query).fetchall() == expected
    finally:
        writer.close()
