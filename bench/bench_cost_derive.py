"""Benchmark: what filling ``run_calls`` adds to a derive pass (issue 22).

Times ``loopsight.stores.derive.refresh`` of the newest ``--traces`` traces of a store (a copy of
it: each pass is rolled back), with every per-run table and with all but ``run_calls``,
interleaved ``--repeat`` times; prints the medians.

    .venv/bin/python bench/bench_cost_derive.py /tmp/cost-bench/a.duckdb --traces 10 50 500
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import pyarrow as pa

from loopsight.stores.derive import TABLES, refresh


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("db", help="a loopsight DuckDB file (bench_analytics.py --db F --keep makes one)")
    parser.add_argument("--traces", type=int, nargs="+", default=[10, 50, 500])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    copy = Path(tempfile.mkdtemp(prefix="bench-cost-derive-")) / "copy.duckdb"
    shutil.copyfile(args.db, copy)
    con = duckdb.connect(str(copy))
    without = tuple(t for t in TABLES if t != "run_calls")
    print("| traces | with run_calls, ms | without, ms |\n|---:|---:|---:|")
    for n in args.traces:
        newest = con.execute(
            "SELECT trace_id, min(started_at) FROM run_facts GROUP BY trace_id ORDER BY 2 DESC LIMIT $n", {"n": n}
        ).fetchall()
        touched = pa.table({"TraceId": [t for t, _ in newest]})
        since = min(s for _, s in newest)
        times: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(args.repeat):
            for label, tables in (("with", TABLES), ("without", without)):
                con.begin()
                con.register("touched", touched)
                started = time.perf_counter()
                refresh(con, since=since, tables=tables)
                times[label].append(time.perf_counter() - started)
                con.rollback()
        print(
            f"| {n} | {statistics.median(times['with']) * 1e3:.0f} | {statistics.median(times['without']) * 1e3:.0f} |"
        )
    con.close()
    shutil.rmtree(copy.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
