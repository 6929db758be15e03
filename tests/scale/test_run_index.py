"""The ClickHouse run index: filled by the writer, by the indexer for exporter-written spans, late run spans."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pyarrow.compute as pc

from loopsight.analytics.runs import list_runs
from loopsight.ingest.pipeline import prepare
from loopsight.stores.clickhouse_run_index import index_new_spans, refresh, watermark
from loopsight.stores.clickhouse_writer import ClickHouseWriter
from loopsight.stores.otel_rows import request_to_otel_traces


def _indexed(con: Any) -> int:
    return con.execute("SELECT count() FROM loopsight_run_index FINAL").fetchall()[0][0]


def test_writer_indexes_the_traces_it_writes(new_clickhouse: Callable[[], Any], fixture_request: Any) -> None:
    con = new_clickhouse()
    writer = ClickHouseWriter(con)
    try:
        table = prepare(fixture_request).table
        assert writer.submit(table).result(timeout=60) == table.num_rows
        assert writer.drain(timeout=120)  # acknowledged once stored; indexed right after
        assert _indexed(con) == table.num_rows
        runs = con.execute("SELECT count() FROM spans WHERE span_type = 'agent' AND SpanId = run_id").fetchall()[0][0]
        assert runs == 18
    finally:
        writer.close()


def test_exporter_spans_get_runs_from_the_indexer_even_when_run_spans_come_late(
    new_clickhouse: Callable[[], Any], duck: Any, fixture_request: Any
) -> None:
    con = new_clickhouse()
    rows = request_to_otel_traces(fixture_request)
    agent_ids = [r[0] for r in duck.execute("SELECT \"SpanId\" FROM spans WHERE span_type = 'agent'").fetchall()]
    agent = pc.is_in(rows.column("SpanId"), pc.cast(agent_ids, rows.column("SpanId").type))
    con.insert_arrow("otel_traces", rows.filter(pc.invert(agent)))
    assert watermark(con) is None
    first = index_new_spans(con)
    assert first > 0 and watermark(con) is not None
    assert con.execute("SELECT countIf(run_id IS NOT NULL) FROM spans").fetchall() == [(0,)]
    assert index_new_spans(con) == 0  # nothing new: nothing re-read

    con.insert_arrow("otel_traces", rows.filter(agent))
    assert index_new_spans(con) > 0
    assert list_runs(con, limit=100) == list_runs(duck, limit=100)
    assert _indexed(con) == rows.num_rows


def test_indexer_looks_back_from_its_watermark_only(new_clickhouse: Callable[[], Any], fixture_request: Any) -> None:
    con = new_clickhouse()
    rows = request_to_otel_traces(fixture_request)
    newest = pc.max(rows.column("Timestamp")).as_py()
    early = pc.less(rows.column("Timestamp"), pc.add(pc.min(rows.column("Timestamp")), timedelta(minutes=10)))
    con.insert_arrow("otel_traces", rows.filter(pc.invert(early)))
    index_new_spans(con)
    assert watermark(con).replace(tzinfo=None) == newest.replace(tzinfo=None)
    con.insert_arrow("otel_traces", rows.filter(early))  # hours older than the watermark
    assert index_new_spans(con, lookback=timedelta(minutes=5)) == 0
    assert index_new_spans(con, lookback=timedelta(days=1)) > 0
    assert _indexed(con) == rows.num_rows
    assert refresh(con, every=3600) in (True, False) and refresh(con, every=3600) is False


def test_a_reader_that_cannot_update_the_index_still_answers(
    new_clickhouse: Callable[[], Any], fixture_request: Any, caplog: Any
) -> None:
    con = new_clickhouse()
    con.insert_arrow("otel_traces", request_to_otel_traces(fixture_request))
    index_new_spans(con)
    con.command("DROP TABLE loopsight_run_index_state")  # as for a user without INSERT rights: the pass fails
    assert refresh(con, every=0) is False
    assert "cannot update the run index" in caplog.text
    assert len(list_runs(con, limit=100)) == 18
