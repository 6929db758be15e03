"""Benchmark: the budget advisor's questions on a bench_analytics store, interleaved, with medians and minima.

bench_analytics.py times the Budgets page with every other page (median of 5); this times its
variants side by side (every agent, one agent, per agent and service, one budget run by run)
next to a bare scan of ``run_step_totals``, ``--repeat`` times each, interleaved, so a run on a
loaded machine still compares them.

    .venv/bin/python bench/bench_analytics.py --db /tmp/a.duckdb --keep   # fills the store once
    .venv/bin/python bench/bench_budgets.py --db /tmp/a.duckdb --repeat 15
    .venv/bin/python bench/bench_budgets.py --db /tmp/a.duckdb --derive   # ingest cost of run_step_totals

With ``--derive`` it instead times the writer's derivation of one pass's scope (the newest 10 / 50
/ 500 traces) with and without ``run_step_totals``, interleaved and rolled back, on a copy of DB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import duckdb
import pyarrow as pa

from loopsight.analytics.budgets import budget_replay, budgets
from loopsight.stores import derive
from loopsight.stores.duckdb_store import DuckDBReader

START = datetime(2026, 1, 1)
END = START + timedelta(days=7)


def derive_cost(path: str, repeat: int) -> None:
    """``derive.refresh`` of the newest traces with and without run_step_totals, on a copy of ``path``."""
    directory = tempfile.mkdtemp(prefix="bench-budgets-")
    copy = os.path.join(directory, "copy.duckdb")
    shutil.copy(path, copy)
    con = duckdb.connect(copy)
    without = tuple(t for t in derive.TABLES if t != "run_step_totals")
    print("| traces | without run_step_totals | with | ratio |\n|---:|---:|---:|---:|")
    try:
        for n in (10, 50, 500):
            rows = con.execute("SELECT trace_id, started_at FROM run_facts ORDER BY started_at DESC LIMIT $n", {"n": n})
            found = rows.fetchall()
            con.register("touched", pa.table({"TraceId": [r[0] for r in found]}))
            since = min(r[1] for r in found)
            samples: dict[tuple[str, ...], list[float]] = {derive.TABLES: [], without: []}
            for round_ in range(repeat + 1):
                for tables, seconds in samples.items():
                    con.execute("BEGIN")
                    started = time.perf_counter()
                    derive.refresh(con, since=since, tables=tables)
                    if round_:  # the first round warms up
                        seconds.append(time.perf_counter() - started)
                    con.execute("ROLLBACK")
            con.unregister("touched")
            with_ms, without_ms = (statistics.median(samples[t]) * 1e3 for t in (derive.TABLES, without))
            print(f"| {n} | {without_ms:.0f} ms | {with_ms:.0f} ms | {with_ms / without_ms:.2f} |")
    finally:
        con.close()
        shutil.rmtree(directory, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="a store bench_analytics.py filled")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--agent", default="agent-03")
    parser.add_argument("--derive", action="store_true", help="time the derivation instead (median of --repeat)")
    args = parser.parse_args(argv)
    if args.derive:
        print(f"load average before {os.getloadavg()[0]:.1f}")
        derive_cost(args.db, args.repeat)
        print(f"load average after {os.getloadavg()[0]:.1f}")
        return 0
    con = DuckDBReader(duckdb.connect(args.db, read_only=True))
    print(f"load average before {os.getloadavg()[0]:.1f}, duckdb {duckdb.__version__}, {os.cpu_count()} CPUs")

    def scan() -> None:
        con.execute(
            "SELECT min(trace_id), min(run_id), min(agent), min(service), min(started_at), min(ordinal), "
            "min(tokens), min(cum_tool_calls) FROM run_step_totals"
        ).fetchall()

    windows: dict[str, dict[str, Any]] = {
        "last 24 h": {"since": END - timedelta(days=1), "until": END},
        "all 7 days": {"since": START, "until": END},
        "no window": {},
    }
    print("| window | every agent | one agent | per agent and service | budget_replay (one agent) | bare scan |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, w in windows.items():
        questions: dict[str, Callable[[], Any]] = {
            "all": lambda w=w: budgets(con, **w),
            "agent": lambda w=w: budgets(con, agent=args.agent, **w),
            "service": lambda w=w: budgets(con, by_service=True, **w),
            "replay": lambda w=w: budget_replay(con, kind="steps", value=3, agent=args.agent, **w),
            "scan": scan,
        }
        samples: dict[str, list[float]] = {name: [] for name in questions}
        for ask in questions.values():
            ask()  # warm-up
        for _ in range(args.repeat):
            for name, ask in questions.items():
                started = time.perf_counter()
                ask()
                samples[name].append(time.perf_counter() - started)
        cells = [f"{statistics.median(s) * 1e3:.0f} ({min(s) * 1e3:.0f})" for s in samples.values()]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print(f"\nms: median (min) of {args.repeat}; load average after {os.getloadavg()[0]:.1f}")
    con.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
