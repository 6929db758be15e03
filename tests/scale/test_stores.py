"""Store URLs, the collector's direct ClickHouse writer, and open_reader."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from loopsight.analytics.runs import list_runs
from loopsight.ingest.pipeline import prepare
from loopsight.stores import StoreURLError, open_reader, parse_store_url
from loopsight.stores.clickhouse import ClickHouseError, format_param
from loopsight.stores.clickhouse_writer import ClickHouseWriter


def test_store_urls_parse_and_bad_ones_say_why() -> None:
    url = parse_store_url("clickhouse://loop:p%40ss@ch.local:9123/otel?table=traces")
    assert (url.host, url.port, url.user, url.password, url.database, url.table) == (
        "ch.local",
        9123,
        "loop",
        "p@ss",
        "otel",
        "traces",
    )
    assert "p@ss" not in url.redacted()
    assert parse_store_url("chdb:///var/ch?database=x").database == "x"
    assert parse_store_url("duckdb:///tmp/a.duckdb").path == "/tmp/a.duckdb"
    for bad, why in [
        ("ftp://x", "unknown store scheme"),
        ("clickhouse:///db", "needs a host"),
        ("chdb://", "needs a path"),
        ("clickhouse://h/db;drop", "not a plain identifier"),
        ("", "empty"),
    ]:
        with pytest.raises(StoreURLError, match=why):
            parse_store_url(bad)
    with pytest.raises(StoreURLError):
        open_reader("ftp://x")


def test_parameters_are_quoted_not_spliced(clickhouse: Any) -> None:
    evil = "x'); DROP TABLE otel_traces; --\\"
    assert clickhouse.execute(
        "SELECT {s:String} AS s, {n:Nullable(Int64)} AS n", {"s": evil, "n": None}
    ).fetchall() == [(evil, None)]
    assert format_param(["a'b"]) == "['a\\'b']"
    for text in ("a\\b", "it's", "tab\there", "line\nbreak", "cr\rz", "nul\x00x", "\\N", "x\\u00df", "é ß 日本"):
        assert clickhouse.execute("SELECT {a:Array(String)}, {s:String}", {"a": [text], "s": text}).fetchall() == [
            ([text], text)
        ]
    with pytest.raises(ClickHouseError, match="missing query parameter"):
        clickhouse.execute("SELECT {absent:String}", {})


def test_collector_batches_written_to_clickhouse_read_like_duckdb(
    new_clickhouse: Callable[[], Any], duck: Any, fixture_request: Any
) -> None:
    con = new_clickhouse()
    writer = ClickHouseWriter(con)
    try:
        table = prepare(fixture_request).table
        half = table.num_rows // 2
        futures = [writer.submit(table.slice(0, half)), writer.submit(table.slice(half))]
        assert sum(f.result(timeout=60) for f in futures) == table.num_rows
        assert writer.drain(timeout=120)
        reader = writer.reader()
        assert reader.execute("SELECT count() FROM otel_traces").fetchall() == [(table.num_rows,)]
        assert list_runs(reader, limit=100) == list_runs(duck, limit=100)
    finally:
        writer.close()
