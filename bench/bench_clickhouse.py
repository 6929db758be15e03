"""ClickHouse (chdb) sizing figures for docs/scale-out.md.

Fills ``otel_traces`` as the contrib exporter does (the test fixture's spans, tiled with
fresh ids and times), once with only the exporter's DDL and once with loopsight's
materialized columns, then measures insert rate per CPU-second, compressed bytes per
span, each analytics question's time, and which indexes the queries use.

Run: ``.venv/bin/python bench/bench_clickhouse.py [--copies 900] [--before]`` (111 spans per copy);
``--before`` also times, interleaved with the current SQL, the same questions computed per
query as before the per-run tables: every run's loops, steps and members derived in the query,
from the ``spans`` view (``otel_traces`` joined with the run index), not ``typed_spans``.
"""

from __future__ import annotations

import argparse
import re
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

from scale.fixture_spans import build

from loopsight.analytics import sql as analytics_sql
from loopsight.analytics.burn import burn
from loopsight.analytics.loops import loops
from loopsight.analytics.overview import overview
from loopsight.analytics.runs import list_runs, trace_detail
from loopsight.analytics.stalls import stalls
from loopsight.analytics.terminations import terminations
from loopsight.analytics.tools import tool_stats
from loopsight.ingest.exporter import request_to_otel_traces
from loopsight.ingest.pipeline import spans_to_request
from loopsight.stores import clickhouse_run_index
from loopsight.stores.clickhouse import ClickHouseConnection, connect_chdb
from loopsight.stores.clickhouse_run_index import index_new_spans
from loopsight.stores.clickhouse_schema import MIGRATIONS, SchemaOptions, upgrade


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


def bytes_per_span(con: ClickHouseConnection, spans: int, like: str = "%") -> float:
    (total,) = con.execute(
        "SELECT sum(data_compressed_bytes) FROM system.columns WHERE database = currentDatabase() AND table = 'otel_traces' AND name LIKE {p:String}",
        {"p": like},
    ).fetchall()[0]
    return total / spans


_DERIVED = {
    "loops_derived": "loops_core",
    "burn_steps_derived": "burn_steps",
    "stalls_members_derived": "stalls_members",
}


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class per_query:
    """While active, the ClickHouse questions run as they did before the per-run tables."""

    def __enter__(self) -> None:
        self._file = analytics_sql.dialect_file

        def before(dialect: str, name: str) -> str:
            text = self._file(dialect, name)
            for derived, source in _DERIVED.items():
                text = text.replace(
                    analytics_sql.load(f"clickhouse/{derived}"), analytics_sql.load(f"clickhouse/{source}")
                )
            return re.sub(
                r"\b(\w+\.)?(TraceId|trace_id) IN \{traces:Array\(String\)\}",
                "1",
                text.replace("FROM typed_spans", "FROM spans"),
            )

        analytics_sql.dialect_file = before

    def __exit__(self, *exc: object) -> None:
        analytics_sql.dialect_file = self._file


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=900)
    parser.add_argument("--batch-copies", type=int, default=240)
    parser.add_argument(
        "--before", action="store_true", help="also time the questions derived per query (before the per-run tables)"
    )
    args = parser.parse_args()
    base = request_to_otel_traces(spans_to_request(build()))
    spans = base.num_rows * args.copies
    directory = tempfile.mkdtemp(prefix="loopsight-bench-ch-")

    plain = connect_chdb(directory, database="exporter_only")
    for statement in MIGRATIONS[0].statements(SchemaOptions()):
        plain.command(statement)
    wall_plain, cpu_plain = fill(plain, base, args.copies, args.batch_copies)
    plain.command("OPTIMIZE TABLE otel_traces FINAL")

    con = connect_chdb(directory, database="loopsight")
    upgrade(con)
    wall, cpu = fill(con, base, args.copies, args.batch_copies)
    con.command("OPTIMIZE TABLE otel_traces FINAL")

    print(
        f"spans: {spans:,} ({base.num_rows} per tile x {args.copies}), batches of {base.num_rows * args.batch_copies:,}"
    )
    print(
        f"insert, exporter DDL only : {spans / wall_plain:,.0f} spans/s wall, {spans / cpu_plain:,.0f} spans per CPU-second"
    )
    print(f"insert, + loopsight columns: {spans / wall:,.0f} spans/s wall, {spans / cpu:,.0f} spans per CPU-second")
    print(
        f"compressed bytes/span: exporter-only {bytes_per_span(plain, spans):.1f}, with loopsight columns {bytes_per_span(con, spans):.1f} "
        f"(of which loopsight_* {bytes_per_span(con, spans, 'loopsight%'):.1f})"
    )

    started = time.perf_counter()
    traces = index_new_spans(con)
    print(f"run index, first pass: {traces:,} traces in {(time.perf_counter() - started) * 1000:,.0f} ms")
    extra = pa.concat_tables([tiled(base, c) for c in range(args.copies, args.copies + 12)])
    con.insert_arrow("otel_traces", extra)
    started = time.perf_counter()
    traces = index_new_spans(con)
    print(
        f"run index, incremental pass after {extra.num_rows:,} new spans: {traces:,} traces in {(time.perf_counter() - started) * 1000:,.0f} ms"
    )
    spans += extra.num_rows
    # Time the questions alone: no indexer pass (analytics.sql refreshes at most every 5 s) while timing.
    clickhouse_run_index._LAST[id(con._engine)] = time.monotonic() + 1e9

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
        "count(*) FROM spans (view)": lambda: con.execute("SELECT count() FROM spans").fetchall(),
        "bare scan: sum(Duration) FROM otel_traces": lambda: con.execute(
            "SELECT sum(Duration) FROM otel_traces"
        ).fetchall(),
    }
    timings: dict[tuple[str, str], list[float]] = {}
    variants = [("current", lambda: None)] + ([("per query (before)", per_query)] if args.before else [])
    for _ in range(3):
        for label, switch in variants:
            with switch() or _nothing():
                for name, fn in questions.items():
                    timings.setdefault((name, label), []).append(timed(fn, 1))
    for (name, label), values in timings.items():
        print(f"[{label}] query {name}: {statistics.median(values) * 1000:,.0f} ms (median of 3)")

    for label, sql in [
        ("trace lookup on otel_traces", "SELECT count() FROM otel_traces WHERE TraceId = {t:String}"),
        (
            "a trace's typed spans, as the per-run derivation reads them",
            "SELECT count() FROM typed_spans WHERE TraceId IN [{t:String}]",
        ),
        ("a trace's loop rows", "SELECT count() FROM loopsight_run_loops WHERE trace_id = {t:String}"),
    ]:
        print(f"EXPLAIN indexes=1 ({label}):")
        for (line,) in con.execute("EXPLAIN indexes = 1 " + sql, {"t": trace_id}).fetchall():
            print("   ", line)


if __name__ == "__main__":
    main()
