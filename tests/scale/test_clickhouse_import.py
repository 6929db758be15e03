"""The ClickHouse store: exporter-written spans imported into the one model, late run spans,
the look-back from the watermark, collector batches, and readers that never write."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow.compute as pc
import pytest
from exporter_rows import create_otel_traces, request_to_otel_traces
from spans import make_run, request_of, run_with_two_calls

from loopsight.analytics.runs import list_runs
from loopsight.ingest.pipeline import prepare
from loopsight.model import DERIVED
from loopsight.stores.clickhouse_store import ClickHouseStore, derive_pending, import_exported, store_batch, sync
from loopsight.stores.files import KEY_BYTES


def _count(con: Any, sql: str) -> int:
    return int(con.execute(sql).fetchall()[0][0])


def test_collector_batches_are_stored_derived_and_read_like_duckdb(
    new_clickhouse: Callable[[], Any], duck: Any, fixture_request: Any
) -> None:
    con = new_clickhouse()
    store = ClickHouseStore(con, import_interval=3600)
    try:
        table = prepare(fixture_request).table
        half = table.num_rows // 2
        futures = [store.submit(table.slice(0, half)), store.submit(table.slice(half)), store.submit(table)]
        assert sum(f.result(timeout=60) for f in futures) == 2 * table.num_rows  # the repeat is acknowledged...
        reader = store.reader()
        assert _count(reader, "SELECT count() FROM spans") == table.num_rows  # ...and stored once
        assert _count(reader, "SELECT count() FROM derive_pending") == 0
        assert list_runs(reader, limit=100) == list_runs(duck, limit=100)
    finally:
        store.close()


def test_the_stores_secret_key_is_made_once_and_kept(new_clickhouse: Callable[[], Any]) -> None:
    con = new_clickhouse()
    keys = []
    for _ in range(2):  # a second writer opening the same database reads the key the first made
        store = ClickHouseStore(con.cursor(), import_interval=3600)
        try:
            keys += [store.secret_key(), store.secret_key()]
        finally:
            store.close()
    assert len(set(keys)) == 1 and len(keys[0]) == KEY_BYTES
    assert _count(con, "SELECT count() FROM loopsight_secret") == 1


def test_pairs_priced_by_an_earlier_pass_are_not_priced_again(
    new_clickhouse: Callable[[], Any], duck: Any, fixture_request: Any
) -> None:
    con = new_clickhouse()
    table = prepare(fixture_request).table
    half = table.num_rows // 2
    sql = "SELECT * FROM model_prices ORDER BY provider, model, valid_from, input_from"
    for part in (table.slice(0, half), table.slice(half)):  # both with model calls
        assert pc.any(pc.equal(part.column("span_type"), "llm")).as_py()
        store_batch(con, part)
        derive_pending(con)
    assert con.rows(sql) == duck.rows(sql) and duck.rows(sql)


def test_exporter_spans_get_their_runs_even_when_run_spans_come_late(
    new_clickhouse: Callable[[], Any], duck: Any, fixture_request: Any
) -> None:
    con = new_clickhouse()
    rows = request_to_otel_traces(fixture_request)
    agent_ids = [r[0] for r in duck.execute("SELECT \"SpanId\" FROM spans WHERE span_type = 'agent'").fetchall()]
    agent = pc.is_in(rows.column("SpanId"), pc.cast(agent_ids, rows.column("SpanId").type))
    con.insert_arrow("otel_traces", rows.filter(pc.invert(agent)))
    assert sync(con) > 0
    early = {r["run_id"] for r in list_runs(con, limit=100)}
    assert early and not early & set(agent_ids)  # meanwhile a trace's root holding model calls is its run
    assert import_exported(con) == 0 and derive_pending(con) == 0  # nothing new: nothing re-read

    con.insert_arrow("otel_traces", rows.filter(agent))
    assert sync(con) > 0
    assert list_runs(con, limit=100) == list_runs(duck, limit=100)
    assert _count(con, "SELECT count() FROM spans") == rows.num_rows
    # the traces derived before had their rows replaced, the new ones none to delete: no row twice
    for table in DERIVED:
        assert _count(con, f"SELECT count() FROM {table}") == _count(duck, f"SELECT count(*) FROM {table}"), table


def test_the_import_looks_back_from_its_watermark_only(new_clickhouse: Callable[[], Any], fixture_request: Any) -> None:
    con = new_clickhouse()
    rows = request_to_otel_traces(fixture_request)
    early = pc.less(rows.column("Timestamp"), pc.add(pc.min(rows.column("Timestamp")), timedelta(minutes=10)))
    con.insert_arrow("otel_traces", rows.filter(pc.invert(early)))
    late = import_exported(con)
    assert late == rows.num_rows - pc.sum(early).as_py()
    con.insert_arrow("otel_traces", rows.filter(early))  # hours older than the watermark
    assert import_exported(con, lookback=timedelta(minutes=5)) == 0
    assert import_exported(con, lookback=timedelta(days=1)) == pc.sum(early).as_py()
    assert _count(con, "SELECT count() FROM spans") == 0  # staged until a pass derives them
    assert derive_pending(con) > 0
    assert _count(con, "SELECT count() FROM spans") == rows.num_rows
    # nothing waits that is not stored (the unstaging is not waited for)
    assert (
        _count(
            con, "SELECT count() FROM spans_staged WHERE (TraceId, SpanId) NOT IN (SELECT TraceId, SpanId FROM spans)"
        )
        == 0
    )


def test_a_pass_that_failed_after_writing_spans_writes_none_twice(
    new_clickhouse: Callable[[], Any], fixture_request: Any
) -> None:
    con = new_clickhouse()
    con.insert_arrow("otel_traces", request_to_otel_traces(fixture_request))
    staged = import_exported(con)
    con.command("INSERT INTO spans SELECT * FROM spans_staged")  # as a pass that stopped after its spans
    assert derive_pending(con) > 0
    assert _count(con, "SELECT count() FROM spans") == staged
    assert _count(con, "SELECT count() FROM spans WHERE run_id IS NOT NULL") > 0


def test_loopsight_started_before_the_exporter_imports_once_the_exporter_made_its_table(
    new_clickhouse: Callable[[], Any], duck: Any, fixture_request: Any
) -> None:
    con = new_clickhouse()
    con.command("DROP TABLE otel_traces")  # loopsight's tables only: the exporter has not started
    assert import_exported(con) == 0
    assert (
        _count(con, "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = 'otel_traces'")
        == 0
    )
    create_otel_traces(con)  # the exporter starts, creates its table and writes
    con.insert_arrow("otel_traces", request_to_otel_traces(fixture_request))
    sync(con)
    assert list_runs(con, limit=100) == list_runs(duck, limit=100)


def test_readers_never_write(new_clickhouse: Callable[[], Any], fixture_request: Any) -> None:
    con = new_clickhouse()
    con.insert_arrow("otel_traces", request_to_otel_traces(fixture_request))
    assert list_runs(con, limit=100) == []  # nothing derived yet: a reader does not import or derive
    assert _count(con, "SELECT count() FROM spans") == 0
    sync(con)
    assert len(list_runs(con, limit=100)) == 21


def test_older_exporters_spelling_of_status_and_kind_is_read(
    new_clickhouse: Callable[[], Any], duck: Any, fixture_request: Any
) -> None:
    import pyarrow as pa

    rows = request_to_otel_traces(fixture_request)
    assert "Error" in rows.column("StatusCode").to_pylist()  # the fixture has failures to read
    old_status = pc.binary_join_element_wise("STATUS_CODE_", pc.utf8_upper(rows.column("StatusCode")), "")
    old_kind = pc.binary_join_element_wise("SPAN_KIND_", pc.utf8_upper(rows.column("SpanKind")), "")
    old = rows.set_column(rows.schema.get_field_index("StatusCode"), "StatusCode", pa.array(old_status, pa.string()))
    old = old.set_column(old.schema.get_field_index("SpanKind"), "SpanKind", pa.array(old_kind, pa.string()))
    assert old.column("StatusCode").to_pylist()[0].startswith("STATUS_CODE_")
    con = new_clickhouse()
    con.insert_arrow("otel_traces", old)
    assert sync(con) > 0
    assert list_runs(con, limit=100) == list_runs(duck, limit=100)
    kinds = con.execute('SELECT DISTINCT "SpanKind" FROM spans ORDER BY 1').fetchall()
    assert {k for (k,) in kinds} <= {"Internal", "Server", "Client", "Producer", "Consumer", "Unspecified"}
    assert _count(con, "SELECT countIf(\"StatusCode\" = 'Error') FROM spans") == _count(
        duck, "SELECT count(*) FILTER (WHERE \"StatusCode\" = 'Error') FROM spans"
    )


def test_a_trace_that_cannot_be_derived_is_set_aside_and_holds_back_no_other(
    new_clickhouse: Callable[[], Any], caplog: pytest.LogCaptureFixture
) -> None:
    """As on DuckDB (tests/derive): a trace whose two calls of 5e18 tokens overflow its run's
    sums failed every pass, and on ClickHouse no later run was ever derived. Now the pending
    traces are derived in parts and the one that fails alone is set aside: its spans stored
    as they came, no longer pending or staged."""
    import pyarrow as pa

    con = new_clickhouse()
    store = ClickHouseStore(con, import_interval=3600)
    try:
        poisoned = run_with_two_calls("poisoned")
        table = prepare(request_of(poisoned)).table  # as an earlier normalizer stored it
        tokens = pc.if_else(pc.equal(table.column("span_type"), "llm"), 5_000_000_000_000_000_000, None)
        table = table.set_column(table.schema.get_field_index("input_tokens"), "input_tokens", tokens.cast(pa.int64()))
        store.run_job(lambda c: store_batch(c, table)).result(timeout=60)
        for i in range(5):
            assert store.submit(prepare(request_of(make_run(tools=2, agent=f"healthy-{i}"))).table).result(60) == 4
        reader = store.reader()
        agents = {r["agent"]: r for r in list_runs(reader, limit=100)}
        assert set(agents) == {f"healthy-{i}" for i in range(5)}
        assert agents["healthy-3"]["tool_calls"] == 2
        trace = poisoned[0].trace_id.hex()
        assert _count(reader, f"SELECT count() FROM spans WHERE TraceId = '{trace}'") == 4
        assert _count(reader, f"SELECT count() FROM spans_staged WHERE TraceId = '{trace}'") == 0
        assert _count(reader, "SELECT count() FROM derive_pending") == 0
        assert store.stats.set_aside_traces == 1 and store.stats.failed_derives == 1
        assert f"trace {trace} cannot be derived" in caplog.text
    finally:
        store.close()


def test_a_run_that_starts_at_the_unix_epoch_is_derived_and_unstaged(new_clickhouse: Callable[[], Any]) -> None:
    store = ClickHouseStore(new_clickhouse(), import_interval=3600)
    try:  # the pass's look-back from the earliest start went before 1970, and the unstaging failed on it
        for agent in ("epoch", "epoch2"):
            spans = make_run(tools=2, agent=agent)
            spans[-1].start_time_unix_nano = 0  # the run span (last) starts at the epoch, its calls now
            store.submit(prepare(request_of(spans)).table).result(timeout=60)
        reader = store.reader()
        assert store.stats.failed_derives == 0
        deadline = time.monotonic() + 30  # the unstaging DELETE is asynchronous (lightweight_deletes_sync = 0)
        while _count(reader, "SELECT count() FROM spans_staged") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _count(reader, "SELECT count() FROM spans_staged") == 0
        assert _count(reader, "SELECT count() FROM derive_pending") == 0
        assert sorted(r["agent"] for r in list_runs(reader, limit=10)) == ["epoch", "epoch2"]
    finally:
        store.close()


def test_spans_retention_deleted_are_not_imported_again(new_clickhouse: Callable[[], Any]) -> None:
    """A retention shorter than the import's look-back (6 h) deleted spans the next import (5 s later)
    read back from the exporter's otel_traces, derived and listed again."""
    con = new_clickhouse()
    now = time.time_ns()
    old, new = make_run(start_ns=now - 3 * 3600 * 10**9, agent="old"), make_run(start_ns=now - 60 * 10**9, agent="new")
    con.insert_arrow("otel_traces", request_to_otel_traces(request_of(old + new)))
    sync(con)
    assert {r["agent"] for r in list_runs(con)} == {"old", "new"}
    cutoff = datetime.now(UTC).replace(tzinfo=None) - timedelta(hours=2)
    assert ClickHouseStore.delete_before(con, cutoff, 1000) == len(old)
    sync(con)
    assert {r["agent"] for r in list_runs(con)} == {"new"}
    assert _count(con, "SELECT count() FROM spans") == len(new)
    later = make_run(start_ns=now - 3600 * 10**9, agent="later")  # after the cutoff: imported
    con.insert_arrow("otel_traces", request_to_otel_traces(request_of(later)))
    sync(con)
    assert {r["agent"] for r in list_runs(con)} == {"new", "later"}
