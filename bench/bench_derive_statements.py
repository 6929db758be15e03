"""One derive pass, statement by statement: where a pass's time goes, and what a revision added.

Fills (``--fill``, if the file does not exist) a DuckDB store with ``--runs`` runs of the load
tool through the store's own writer, then for each scope size N (the newest N traces) runs
``stores.derive.derive_traces`` ``--repeat`` times, each rolled back, timing every statement it
executes; prints the median of each and of the whole pass. Against an earlier revision, run it
again with that revision's package tree first on ``PYTHONPATH`` and its own store (schemas
differ), alternating the two a few times (``bench_ingest_ab.baseline_tree`` builds the tree):

    .venv/bin/python bench/bench_derive_statements.py /tmp/now.duckdb --traces 100 2000
    PYTHONPATH=$(.venv/bin/python -c 'import sys; sys.path.insert(0, "bench"); \\
        import bench_ingest_ab as b; print(b.baseline_tree("a1c47d1", []))') \\
        .venv/bin/python bench/bench_derive_statements.py /tmp/before.duckdb --traces 100 2000
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_ingest


class TimedConnection:
    """A connection whose ``execute`` calls are timed by their first 70 characters."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.times: dict[str, list[float]] = collections.defaultdict(list)

    def execute(self, sql: str, params: Any = None) -> Any:
        key = " ".join(sql.split())[:70]
        started = time.perf_counter()
        result = self.con.execute(sql, params) if params is not None else self.con.execute(sql)
        self.times[key].append(time.perf_counter() - started)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.con, name)


def fill(path: str, load_tool: str, runs: int) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from loopsight.ingest.pipeline import prepare
    from loopsight.stores.duckdb_store import Store

    requests, _ = bench_ingest.load_tool(load_tool).build_requests(runs)
    store = Store.open(path)
    try:
        for body in requests:
            store.submit(prepare(ExportTraceServiceRequest.FromString(body)).table).result()
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("db")
    parser.add_argument("--traces", type=int, nargs="*", default=[20, 100, 1000])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--runs", type=int, default=6000)
    parser.add_argument("--load-tool", default="/work/shared/tools/otlp_load.py")
    args = parser.parse_args()
    if not Path(args.db).exists():
        fill(args.db, args.load_tool, args.runs)
    from loopsight.stores import derive

    con = duckdb.connect(args.db)
    for n in args.traces:
        ids = [
            r[0]
            for r in con.execute(
                "SELECT trace_id FROM run_facts ORDER BY started_at DESC LIMIT $n", {"n": n}
            ).fetchall()
        ]
        con.register("touched", pa.table({"TraceId": ids}))
        since = con.execute(
            'SELECT min(started_at) FROM run_facts WHERE trace_id IN (SELECT "TraceId" FROM touched)'
        ).fetchone()[0]
        timed, whole = TimedConnection(con), []
        for _ in range(args.repeat):
            con.begin()
            started = time.perf_counter()
            derive.derive_traces(timed, since)
            whole.append(time.perf_counter() - started)
            con.rollback()
        print(f"== {n} traces: whole pass median {statistics.median(whole) * 1e3:.1f} ms ({derive.__file__})")
        for key, values in sorted(timed.times.items(), key=lambda kv: -statistics.median(kv[1])):
            print(f"  {statistics.median(values) * 1e3:7.1f} ms  {key}")
    con.close()


if __name__ == "__main__":
    main()
