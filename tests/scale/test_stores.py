"""Store URLs, the collector's direct ClickHouse writer, and open_reader."""

from __future__ import annotations

from typing import Any

import pytest

from loopsight.stores import StoreURLError, open_reader, parse_store_url
from loopsight.stores.clickhouse import ClickHouseError, format_param


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
    assert url.redacted().endswith("/otel?table=traces")  # what the logs say names the table read
    assert parse_store_url(url.redacted().replace("***", "x")).table == "traces"
    assert parse_store_url("chdb:///var/ch?database=x").database == "x"
    ipv6 = parse_store_url("clickhouse://ann:pw@[::1]:8123/otel")  # its host was shown bare: ann:***@::1:8123
    assert ipv6.host == "::1" and ipv6.redacted() == "clickhouse://ann:***@[::1]:8123/otel"
    assert parse_store_url(ipv6.redacted()).host == "::1"
    assert parse_store_url("duckdb:///tmp/a.duckdb").path == "/tmp/a.duckdb"
    for bad, why in [
        ("ftp://x", "unknown store scheme"),
        ("clickhouse:///db", "needs a host"),
        ("chdb://", "needs a path"),
        ("clickhouse://h/db;drop", "not a plain identifier"),
        # the exporter's table named as one of loopsight's: both wrote into one table (the docstring's example)
        ("clickhouse://h/db?table=spans", "table 'spans' is loopsight's own"),
        ("chdb:///var/ch?table=loopsight_import", "loopsight's own"),
        # an option the scheme does not take was ignored: ?database=otel on a server read the database 'default'
        ("clickhouse://h:8123?database=otel", "unknown store URL option 'database'.*the database is the path"),
        ("chdb:///var/ch?databse=x", "unknown store URL option 'databse'.*takes \\?database&table"),
        ("", "empty"),
    ]:
        with pytest.raises(StoreURLError, match=why):
            parse_store_url(bad)
    with pytest.raises(StoreURLError):
        open_reader("ftp://x")
    for bad, why in [  # what a message shows of a URL holds no password, even of one that does not parse
        ("clickhouse://ann:pa[ss@localhost:8123/db", "percent-encode"),
        ("clickhouse://ann:secret@[::1/db", "percent-encode"),
        ("clickhouse://ann:secret@h:99999/db", "bad port"),
        ("clickhouse://ann:secret@/db", "needs a host"),
        # a / ? or # in the password: the host ended before it ('bad port', or its tail shown as the database)
        ("clickhouse://ann:2024/secret@db.internal:8123/otel", "percent-encode / \\? #"),
        ("clickhouse://ann:sec#ret@db.internal/otel", "percent-encode"),
        ("clickhouse://ann:secret?x@db.internal/otel", "percent-encode"),
    ]:
        with pytest.raises(StoreURLError, match=why) as failure:
            parse_store_url(bad)
        assert "secret" not in str(failure.value) and "pa[ss" not in str(failure.value)


def test_a_reader_never_makes_a_chdb_store(tmp_path: Any) -> None:
    from loopsight.stores import StoreError

    (tmp_path / "a-file").write_text("x")
    for path, why in [(tmp_path / "typo", "does not exist"), (tmp_path / "a-file", "not a directory")]:
        with pytest.raises(StoreError, match=why):
            open_reader(f"chdb://{path}")
    assert not (tmp_path / "typo").exists()
    plain = tmp_path / "plain"  # any folder was made a store: `runs --store chdb:///` filled / with chdb's
    plain.mkdir()
    (plain / "notes.txt").write_text("x")
    with pytest.raises(StoreError, match="holds no database 'default'"):
        open_reader(f"chdb://{plain}")
    assert [p.name for p in plain.iterdir()] == ["notes.txt"]


def test_a_writer_on_a_file_says_so(tmp_path: Any) -> None:
    """``collector``/``ingest --store chdb://FILE`` printed chdb's 38-line native stack trace."""
    from loopsight.stores import StoreError, open_writer

    (tmp_path / "a-file").write_text("x")
    with pytest.raises(StoreError, match=r"cannot make a chdb store at .*a-file: it is not a directory"):
        open_writer(f"chdb://{tmp_path / 'a-file'}")
    assert (tmp_path / "a-file").read_text() == "x"


def test_a_reader_never_makes_a_database_in_a_chdb_store(chdb_dir: Any, clickhouse: Any) -> None:
    from loopsight.stores import StoreError

    assert open_reader(f"chdb://{chdb_dir}?database=parity").rows("SELECT count(*) AS n FROM spans")[0]["n"] > 0
    with pytest.raises(StoreError, match="holds no database 'nope'"):
        open_reader(f"chdb://{chdb_dir}?database=nope")
    assert not (chdb_dir / "metadata" / "nope").exists()


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


def test_a_statement_that_fails_while_it_runs_leaves_the_next_one_its_answer(clickhouse: Any) -> None:
    """chdb kept a failed statement's Arrow bytes ahead of the next answer: after a question failed at
    run time (not when analysed) the next, whatever it was, failed with "Message metadata too long"."""
    from loopsight.analytics import count_runs

    runs = count_runs(clickhouse)
    with pytest.raises(ClickHouseError, match="boom"):
        clickhouse.execute("SELECT throwIf(number = 2, 'boom') FROM numbers(3)")
    assert count_runs(clickhouse) == runs > 0
    assert clickhouse.execute("SELECT 7 AS x").fetchall() == [(7,)]
