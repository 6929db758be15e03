"""ClickHouse (chdb) sizing figures for docs/scale-out.md.

Fills ``otel_traces`` as the contrib exporter does (the test fixture's spans, tiled with fresh
ids and times), then measures the exporter's insert rate, loopsight's import and derivation of
those rows into its own tables (``sync``: what a store's pass does), the compressed bytes per span
of each table, and each analytics question's time on the store.

Run: ``.venv/bin/python bench/bench_clickhouse.py [--copies 900]`` (111 spans per copy). (The
``--before`` mode of earlier sections of docs/scale-out.md timed the questions against the model
before issue 23's restructure: ``git show 9561e7c:bench/bench_clickhouse.py``.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from exporter_rows import create_otel_traces, request_to_otel_traces
from scale.fixture_spans import build

from loopsight.analytics.burn import burn
from loopsight.analytics.loops import loops
from loopsight.analytics.overview import overview
from loopsight.analytics.runs import list_runs, trace_detail
from loopsight.analytics.stalls import stalls
from loopsight.analytics.terminations import terminations
from loopsight.analytics.tools import tool_stats
from loopsight.ingest.pipeline import spans_to_request
from loopsight.stores.clickhouse import ClickHouseConnection, connect_chdb
from loopsight.stores.clickhouse_schema import upgrade
from loopsight.stores.clickhouse_store import sync


def tiled(base: pa.Table, copy: int) -> pa.Table:
    """``base`` with ids suffixed by ``copy`` and times shifted ``copy`` seconds."""
    suffix = f"{copy:08x}"

    def ids(name: str) -> pa.Array:
        column = base.column(name)
        renamed = pc.binary_join_element_wise(column, pa.scalar(suffix), "")
        return pc.if_else(pc.equal(column, ""), column, renamed)

    shift = pa.scalar(copy * 1_000_000_000, pa.duration("ns"))
    columns = {name: base.column(name) for name in base.column_names}
    columns.update(TraceId=ids("TraceId"), SpanId=ids("SpanId"), ParentSpanId=ids("ParentSpanId"))
    columns["Timestamp"] = pc.add(base.column("Timestamp"), shift)
    return pa.table(columns, schema=base.schema)


def fill(con: ClickHouseConnection, base: pa.Table, copies: int, batch_copies: int) -> tuple[float, float]:
    """Insert ``copies`` tiles in batches; returns (wall seconds, CPU seconds)."""
    wall = cpu = 0.0
    for start in range(0, copies, batch_copies):
        batch = pa.concat_tables([tiled(base, c) for c in range(start, min(copies, start + batch_copies))])
        w, c = time.perf_counter(), time.process_time()
        con.insert_arrow("otel_traces", batch)
        wall += time.perf_counter() - w
        cpu += time.process_time() - c
    return wall, cpu


def timed(fn: Callable[[], Any], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def table_bytes(con: ClickHouseConnection, table: str) -> int:
    (total,) = con.execute(
        "SELECT sum(data_compressed_bytes) FROM system.parts WHERE active AND database = currentDatabase() AND table = {t:String}",
        {"t": table},
    ).fetchall()[0]
    return int(total or 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=900)
    parser.add_argument("--batch-copies", type=int, default=240)
    args = parser.parse_args()
    base = request_to_otel_traces(spans_to_request(build()))
    spans = base.num_rows * args.copies
    con = connect_chdb(tempfile.mkdtemp(prefix="loopsight-bench-ch-"), database="loopsight")
    upgrade(con)
    create_otel_traces(con)
    wall, cpu = fill(con, base, args.copies, args.batch_copies)
    print(
        f"spans: {spans:,} ({base.num_rows} per tile x {args.copies}), batches of {base.num_rows * args.batch_copies:,}"
    )
    print(f"exporter insert into otel_traces: {spans / wall:,.0f} spans/s wall, {spans / cpu:,.0f} per CPU-second")

    started, used = time.perf_counter(), time.process_time()
    traces = sync(con)
    wall, cpu = time.perf_counter() - started, time.process_time() - used
    print(
        f"import + derive, first pass: {traces:,} traces, {spans / wall:,.0f} spans/s wall, "
        f"{spans / cpu:,.0f} per CPU-second of this process"
    )
    extra = pa.concat_tables([tiled(base, c) for c in range(args.copies, args.copies + 12)])
    con.insert_arrow("otel_traces", extra)
    started = time.perf_counter()
    traces = sync(con)
    print(
        f"import + derive, incremental pass after {extra.num_rows:,} new spans: {traces:,} traces in "
        f"{(time.perf_counter() - started) * 1000:,.0f} ms"
    )
    spans += extra.num_rows
    con.command("OPTIMIZE TABLE otel_traces FINAL")
    con.command("OPTIMIZE TABLE spans FINAL")
    print(
        f"compressed bytes/span: the exporter's otel_traces {table_bytes(con, 'otel_traces') / spans:.1f}, "
        f"loopsight's spans {table_bytes(con, 'spans') / spans:.1f}"
    )

    since = datetime(2025, 3, 1, 9, 0)
    until = since + timedelta(seconds=args.copies + 3 * 2400)
    trace_id = list_runs(con, limit=1)[0]["trace_id"]
    questions: dict[str, Callable[[], Any]] = {
        "list_runs (limit 50)": lambda: list_runs(con, limit=50),
        "list_runs agent filter": lambda: list_runs(con, limit=50, agent="researcher"),
        "trace_detail": lambda: trace_detail(con, trace_id),
        "tool_stats": lambda: tool_stats(con),
        "terminations (1 h buckets)": lambda: terminations(con, bucket_seconds=3600, since=since, until=until),
        "overview": lambda: overview(con, since=since, until=until),
        "loops": lambda: loops(con, since=since, until=until),
        "stalls": lambda: stalls(con, since=since, until=until, now=until),
        "burn": lambda: burn(con, since=since, until=until),
        "bare scan: sum(Duration) FROM spans": lambda: con.execute('SELECT sum("Duration") FROM spans').fetchall(),
    }
    timings: dict[str, list[float]] = {}
    for _ in range(3):
        for name, fn in questions.items():
            timings.setdefault(name, []).append(timed(fn, 1))
    for name, values in timings.items():
        print(f"query {name}: {statistics.median(values) * 1000:,.0f} ms (median of 3)")


if __name__ == "__main__":
    main()
