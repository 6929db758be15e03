"""Ingest cost of the derived per-run tables: the in-process ingest of bench_ingest.py with the
writer's derivation (``loopsight.analytics.derive.refresh``) on and off, alternating rounds.

    .venv/bin/python bench/bench_derive.py --runs 2000 --rounds 5
    .venv/bin/python bench/bench_derive.py --queries /tmp/a.duckdb   # old vs new SQL, same store

With ``--refresh DB`` it times the writer's derivation of one pass's scope (the newest
``--traces`` runs of DB), ``--before``'s ``analytics/derive.py`` and SQL files against the current
ones, interleaved and rolled back each time: medians of wall and CPU time (every thread) and
whether both sides derived the same rows.

    .venv/bin/python bench/bench_derive.py --refresh /tmp/a.duckdb --before f0dc733 --traces 10 50 500

A ``--refresh`` DB that does not exist is first filled with ``--runs`` runs of the load tool
(``--runs 6000``: 78 k spans; 600 traces are a pass of ~8 k spans, 6000 one of ~80 k).

With ``--queries DB`` it instead times the questions that now read the derived tables against
their previous text (from git revision ``--before``, reading the spans), interleaved on the same
store and checked to give the same answer.

"Off" replaces the writer's call with a no-op in this process only (the store is otherwise the
same: group commit, dedup, run resolution, step derivation). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_ingest

from loopsight.collector import store as store_module

BEFORE = "1c4154c"  # the last revision whose questions read only the spans

QUESTIONS = {
    # name: (question file, {cte: file}, extra parameters)
    "list_runs (50)": (
        "runs",
        {},
        {
            "limit": 50,
            "offset": 0,
            "status": None,
            "termination_reason": None,
            "trace_id": None,
            "tool": None,
            "min_tokens": None,
            "run_ids": None,
        },
    ),
    "overview": ("overview", {}, {"previous_since": None}),
    "terminations": ("terminations", {}, {"bucket_seconds": 3600}),
    "top_runs": ("top_runs", {}, {"limit": 10}),
    "loops": ("loops", {"loop_rows": "loops_core"}, {"kind": None, "limit": 1000}),
    "loop_rate": ("loops_rate", {"loop_rows": "loops_core"}, {}),
    "loops_over_time": ("loops_over_time", {"loop_rows": "loops_core"}, {"bucket_seconds": 3600}),
    "top_looping_tools": ("loops_top_tools", {"loop_rows": "loops_core"}, {"limit": 10}),
    "burn_runs": ("burn_runs", {"loop_rows": "loops_core"}, {"limit": 100}),
    "burn_agents": (
        "burn_agents",
        {"burn_steps": "burn_steps"},
        {"superlinear_k": 1.2, "min_runs": 3, "min_points": 10},
    ),
    "stalls": (
        "stalls",
        {},
        {
            "kind": None,
            "stuck_after_seconds": 300.0,
            "stuck_max_age_seconds": 21600.0,
            "min_samples": 50,
            "min_backoff_ms": 1000.0,
            "min_gap_ms": 2000.0,
            "limit": 1000,
        },
    ),
    "time_to_first_tool": ("stalls_first_tool", {}, {}),
}
# The questions whose current text takes other CTEs than their text at --before.
AFTER_CTES = {
    "burn_agents": {"growth_rows": "burn_growth_derived"},
    "stalls": {"members": "stalls_derived"},
    "time_to_first_tool": {"members": "stalls_derived"},
}
NEW_CTES = {"loops_core": "loops_derived", "burn_steps": "burn_steps_derived"}


def _compose(read, question: str, ctes: dict[str, str]) -> str:
    if not ctes:
        return read(question)
    head = ",\n".join(f"{name} AS (\n{read(file)}\n)" for name, file in ctes.items())
    lines = read(question).splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("--"))
    if lines[first].lstrip().upper().startswith("WITH "):
        lines[first] = "," + lines[first].lstrip()[4:]
        return f"WITH {head}\n" + "\n".join(lines)
    return f"WITH {head}\n" + "\n".join(lines)


def compare_queries(path: str, before: str, repeat: int, only: list[str] | None = None) -> None:
    import subprocess
    import time
    from datetime import timedelta

    import duckdb

    from loopsight.analytics.sql import load, rows
    from loopsight.ingest.sketch import NEAR_BITS_LONG, SET_MASK, SIMHASH_MODE

    root = Path(__file__).resolve().parent.parent

    def old(name: str) -> str:
        return subprocess.run(
            ["git", "show", f"{before}:analytics/sql/{name}.sql"], cwd=root, check=True, capture_output=True, text=True
        ).stdout

    con = duckdb.connect(path, read_only=True)
    end = con.execute("SELECT max(started_at) FROM run_facts").fetchone()[0] + timedelta(seconds=1)
    sketch = {"near_bits_long": NEAR_BITS_LONG, "simhash_mode": SIMHASH_MODE, "set_mask": SET_MASK}
    print("| window | question | before ms | after ms | speed-up | same answer |\n|---|---|---:|---:|---:|---|")
    for label, since in (("24 h", end - timedelta(days=1)), ("7 days", end - timedelta(days=7)), ("no window", None)):
        for name, (question, ctes, extra) in QUESTIONS.items():
            if only and name not in only:
                continue
            params = {"since": since, "until": end, "agent": None, "service": None, **extra}
            if question == "overview":
                params["previous_since"] = since - (end - since) if since else None
                params["since"] = since
            if question == "stalls":
                params["now"] = end
            before_sql = _compose(old, question, ctes)
            after_sql = _compose(
                load, question, AFTER_CTES.get(name) or {k: NEW_CTES.get(v, v) for k, v in ctes.items()}
            )
            before_params = {**params, **(sketch if "loops_core" in ctes.values() else {})}
            times: dict[str, list[float]] = {"before": [], "after": []}
            answers = {}
            for _ in range(repeat):
                for which, sql, p in (("before", before_sql, before_params), ("after", after_sql, params)):
                    started = time.perf_counter()
                    answers[which] = rows(con, sql, p)
                    times[which].append(time.perf_counter() - started)
            b, a = statistics.median(times["before"]), statistics.median(times["after"])
            same = answers["before"] == answers["after"] or sorted(map(repr, answers["before"])) == sorted(
                map(repr, answers["after"])
            )
            print(f"| {label} | {name} | {b * 1e3:.0f} | {a * 1e3:.0f} | {b / a:.0f}x | {'yes' if same else 'NO'} |")
    con.close()


def _before_derive(root: Path, before: str):
    """``analytics/derive.py`` of ``before`` as a module, composing the SQL files of ``before``."""
    import functools
    import subprocess
    import types

    from loopsight.analytics.sql import with_ctes

    def show(path: str) -> str:
        return subprocess.run(
            ["git", "show", f"{before}:{path}"], cwd=root, check=True, capture_output=True, text=True
        ).stdout

    @functools.cache
    def load(name: str) -> str:
        text = show(f"analytics/sql/{name}.sql")
        first = text.split("\n", 1)[0]
        if not first.startswith("-- ctes:"):
            return text
        return with_ctes(
            text, {cte: load(file) for cte, file in (p.strip().split("=") for p in first[len("-- ctes:") :].split(","))}
        )

    old = types.ModuleType("derive_before")
    exec(compile(show("analytics/derive.py"), f"{before}:analytics/derive.py", "exec"), old.__dict__)
    old.load = load
    old.compose = lambda question, *, inline=False, **ctes: with_ctes(
        load(question), {n: load(f) for n, f in ctes.items()}, inline=inline
    )
    if '"ParentSpanId"' not in old._COLUMNS:
        old._COLUMNS += ', "ParentSpanId"'  # the current derive_runs.sql reads it (nested model spans)
    return old


def _derived_rows(con, tables: tuple[str, ...]) -> dict[str, list[tuple]]:
    """The derived rows of the traces in ``touched``, sorted, floats to 9 significant digits
    (a sum's order may differ)."""
    found = {}
    for table in tables:
        rows = con.execute(
            f'SELECT * FROM {table} WHERE trace_id IN (SELECT "TraceId" FROM touched) ORDER BY ALL'
        ).fetchall()
        found[table] = sorted(tuple(f"{v:.9g}" if isinstance(v, float) else v for v in r) for r in rows)
    return found


def compare_refresh(path: str, before: str, traces: list[int], repeat: int) -> None:
    import time

    import duckdb
    import pyarrow as pa

    from loopsight.analytics import derive

    old = _before_derive(Path(__file__).resolve().parent.parent, before)
    con = duckdb.connect(path)
    print(f"| scope | spans | {before} | current | ratio | {before} CPU | current CPU | CPU ratio | same rows |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for n in traces:
        ids = [
            r[0]
            for r in con.execute(
                "SELECT trace_id FROM run_facts ORDER BY started_at DESC LIMIT $n", {"n": n}
            ).fetchall()
        ]
        con.register("touched", pa.table({"TraceId": ids}))
        # the pass reads from the earliest run start of its traces (the writer's look-back bound)
        since = con.execute(
            'SELECT min(started_at) FROM run_facts WHERE trace_id IN (SELECT "TraceId" FROM touched)'
        ).fetchone()[0]
        spans = con.execute(
            'SELECT count(*) FROM spans WHERE "Timestamp" >= $since AND run_id IS NOT NULL AND "TraceId" IN (SELECT "TraceId" FROM touched)',
            {"since": since},
        ).fetchone()[0]
        wall: dict[str, list[float]] = {"before": [], "after": []}
        cpu: dict[str, list[float]] = {"before": [], "after": []}
        rows: dict[str, dict[str, list[tuple]]] = {}
        for i in range(repeat):
            # alternate which side goes first: a pass right after another finds warmer caches
            for side, module in (
                (("before", old), ("after", derive)) if i % 2 == 0 else (("after", derive), ("before", old))
            ):
                con.begin()
                started, used = time.perf_counter(), bench_ingest.own_cpu_seconds()
                module.refresh(con, since=since)
                wall[side].append(time.perf_counter() - started)
                cpu[side].append(bench_ingest.own_cpu_seconds() - used)
                if side not in rows:
                    rows[side] = _derived_rows(con, derive.TABLES)
                con.rollback()
        b, a = statistics.median(wall["before"]), statistics.median(wall["after"])
        bc, ac = statistics.median(cpu["before"]), statistics.median(cpu["after"])
        same = (
            "yes"
            if rows["before"] == rows["after"]
            else "NO: " + ", ".join(t for t in derive.TABLES if rows["before"][t] != rows["after"][t])
        )
        print(
            f"| {n} traces | {spans} | {b * 1e3:.0f} ms | {a * 1e3:.0f} ms | {b / a:.2f}x | {bc * 1e3:.0f} ms | {ac * 1e3:.0f} ms | {bc / ac:.2f}x | {same} |",
            flush=True,
        )
    con.close()


def build_store(path: str, tool, runs: int) -> None:
    """A store at ``path`` holding ``runs`` runs of the load tool, derived (the writer's pass on close)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from loopsight.ingest.pipeline import prepare

    requests, _ = tool.build_requests(runs)
    store = store_module.Store.open(path)
    try:
        for body in requests:
            store.submit(prepare(ExportTraceServiceRequest.FromString(body)).table).result()
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load-tool", default="/work/shared/tools/otlp_load.py")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--queries", metavar="DB", help="time the derived-table questions against their previous SQL on DB"
    )
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="with --queries: just these questions (names as printed)")
    parser.add_argument(
        "--refresh", metavar="DB", help="time --before's derivation of a commit's scope against the current one"
    )
    parser.add_argument("--traces", type=int, nargs="*", default=[10, 50, 500], help="with --refresh: scope sizes")
    args = parser.parse_args()
    if args.refresh:
        if not Path(args.refresh).exists():
            build_store(args.refresh, bench_ingest.load_tool(args.load_tool), args.runs)
        compare_refresh(args.refresh, args.before, args.traces, max(args.repeat, 9))
        return
    if args.queries:
        compare_queries(args.queries, args.before, args.repeat, args.only)
        return
    tool = bench_ingest.load_tool(args.load_tool)
    requests, total = tool.build_requests(args.runs)
    workdir = Path(tempfile.mkdtemp(prefix="bench-derive-"))
    derive = store_module.refresh_derived
    on, off = [], []
    try:
        for _ in range(args.rounds):
            store_module.refresh_derived = lambda con, since: None
            off.append(bench_ingest.in_process(requests, total, workdir)[0])
            store_module.refresh_derived = derive
            on.append(bench_ingest.in_process(requests, total, workdir)[0])
    finally:
        store_module.refresh_derived = derive
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


if __name__ == "__main__":
    main()
