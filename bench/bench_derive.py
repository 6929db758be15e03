"""What the derivation costs: ingest with the derive passes on and off, and one pass statement by statement.

Default: the in-process ingest of ``bench_ingest.py`` with the deriver's passes on and off,
alternating rounds ("off" replaces ``stores.duckdb_deriver.derive_traces`` with a no-op in this
process; group commit, duplicates and ``derive_pending`` are the same):

    .venv/bin/python bench/bench_derive.py --runs 2000 --rounds 5

``--statements DB``: fills DB (if it does not exist) with ``--runs`` runs of the load tool through
the store's own writer, then for each scope size N (the newest N traces) runs
``stores.derive.derive_traces`` ``--repeat`` times, each rolled back, timing every statement it
executes; prints the median of each and of the whole pass. Against an earlier revision, run it
again with that revision's package tree first on ``PYTHONPATH`` and a store of its own (schemas
differ), alternating the two (``bench_ingest_ab.baseline_tree`` lays the tree out):

    .venv/bin/python bench/bench_derive.py --statements /tmp/now.duckdb --traces 100 2000
    PYTHONPATH=$(.venv/bin/python -c 'import sys; sys.path.insert(0, "bench"); \\
        import bench_ingest_ab as b; print(b.baseline_tree("a1c47d1", []))') \\
        .venv/bin/python bench/bench_derive.py --statements /tmp/before.duckdb --traces 100 2000

(The ``--queries`` and ``--refresh`` modes that earlier sections of docs/performance.md ran compared
revisions before the restructure of issue 23, whose derivation lived in ``analytics/derive.py``:
they are in this file at those revisions, ``git show 9561e7c:bench/bench_derive.py``.)
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_ingest

from loopsight.stores import duckdb_deriver


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
    """A store at ``path`` holding ``runs`` runs of the load tool, derived (the writer's pass on close)."""
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


def statements(path: str, traces: list[int], repeat: int) -> None:
    from loopsight.stores import derive

    con = duckdb.connect(path)
    for n in traces:
        ids = [
            r[0]
            for r in con.execute(
                "SELECT trace_id FROM run_facts ORDER BY started_at DESC LIMIT $n", {"n": n}
            ).fetchall()
        ]
        con.register("touched", pa.table({"TraceId": ids}))
        # a pass reads from the earliest run start of its traces (the writer's look-back bound)
        since = con.execute(
            'SELECT min(started_at) FROM run_facts WHERE trace_id IN (SELECT "TraceId" FROM touched)'
        ).fetchone()[0]
        timed, whole = TimedConnection(con), []
        for _ in range(repeat):
            con.begin()
            started = time.perf_counter()
            derive.derive_traces(timed, since)
            whole.append(time.perf_counter() - started)
            con.rollback()
        print(f"== {n} traces: whole pass median {statistics.median(whole) * 1e3:.1f} ms ({derive.__file__})")
        for key, values in sorted(timed.times.items(), key=lambda kv: -statistics.median(kv[1])):
            print(f"  {statistics.median(values) * 1e3:7.1f} ms  {key}")
    con.close()


def on_and_off(load_tool: str, runs: int, rounds: int) -> None:
    requests, total = bench_ingest.load_tool(load_tool).build_requests(runs)
    workdir = Path(tempfile.mkdtemp(prefix="bench-derive-"))
    derive = duckdb_deriver.derive_traces
    on, off = [], []
    try:
        for _ in range(rounds):
            duckdb_deriver.derive_traces = lambda con, since, **kwargs: None
            off.append(bench_ingest.in_process(requests, total, workdir)[0])
            duckdb_deriver.derive_traces = derive
            on.append(bench_ingest.in_process(requests, total, workdir)[0])
    finally:
        duckdb_deriver.derive_traces = derive
        shutil.rmtree(workdir, ignore_errors=True)
    print(
        json.dumps(
            {
                "spans_per_round": total,
                "requests_per_round": len(requests),
                "loadavg": os.getloadavg()[0],
                "without_derive_spans_per_s": [round(x) for x in off],
                "with_derive_spans_per_s": [round(x) for x in on],
                "without_median": round(statistics.median(off)),
                "with_median": round(statistics.median(on)),
                "ratio_with_over_without": round(statistics.median(on) / statistics.median(off), 3),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--load-tool", default="/work/shared/tools/otlp_load.py")
    parser.add_argument("--runs", type=int, help="runs per round (default 2000), or to fill --statements' DB (6000)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--statements", metavar="DB", help="time one pass statement by statement on DB")
    parser.add_argument("--traces", type=int, nargs="*", default=[20, 100, 1000], help="with --statements")
    parser.add_argument("--repeat", type=int, default=7, help="with --statements: passes per scope size")
    args = parser.parse_args()
    if args.statements:
        if not Path(args.statements).exists():
            fill(args.statements, args.load_tool, args.runs or 6000)
        statements(args.statements, args.traces, args.repeat)
        return
    on_and_off(args.load_tool, args.runs or 2000, args.rounds)


if __name__ == "__main__":
    main()
