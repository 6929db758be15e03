"""The analytics questions, this checkout against an earlier revision, on the same generated runs.

    .venv/bin/python bench/bench_query_ab.py --baseline 9561e7c --runs 20000 --rounds 9
    .venv/bin/python bench/bench_query_ab.py --baseline 9561e7c --baseline-tree /work/wt-base \\
        --engines duckdb chdb --runs 100000 --rounds 7 --json /tmp/ab.json

Each side is a worker process started with its own tree's Python (``.venv/bin/python``, the
tree installed editable), so the two never import each other's code. The baseline tree is a
git worktree of ``--baseline`` with its own ``make install`` (``--baseline-tree``: reused when
it is already at that revision and installed, else created there and removed at the end).
``--current-tree`` puts another installed tree in this checkout's place (two earlier revisions
against each other); the generator and this script stay this checkout's.

Each worker fills its own store (its revision's schema, writer and ingest derivation) with the
same runs: ``bench/bench_analytics.py``'s generator of *this* checkout, the same seed, the batch
laid out in the worker's own ``SCHEMA`` (columns one side lacks are dropped, ones it has and
the generator does not are null). DuckDB: the ``Store`` writer into a file, as bench_analytics
fills it. ClickHouse (chdb): the collector's ClickHouse writer of each side (``open_writer``),
drained, then every table merged (``OPTIMIZE ... FINAL``) so both read settled parts; there the
spans also carry the attributes their typed columns come from (:data:`ATTRIBUTES`: before the
restructure ClickHouse stored no typed column and recomputed them from the attributes), and the
baseline's read-time run indexer (a pass at most every 5 s before a question) is run once and
then held off, so the questions are timed alone.

Then the questions that both revisions have, with the same arguments (the dashboard's calls,
as in bench_analytics.py: windows "24 h" and "7 days", plus the Runs list's filter variants and
one run's timeline), are timed alternating sides question by question, the side that goes first
swapped every round, after one warm-up call each. The report holds, per question, the median of
``--rounds`` calls on each side and the ratio current / baseline, a shape of each answer (rows,
or rows per key) to show they answer the same, and the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
import zlib
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------------------------
# worker side: runs under either tree's Python


def _compat() -> None:
    """Make ``bench_analytics.py`` of this checkout importable under an older tree's package.

    Before the restructure the batch schema lived in ``loopsight.collector.batch`` and the
    store in ``loopsight.collector.store`` (questions took a bare DuckDB connection).
    """
    try:
        importlib.import_module("loopsight.ingest.batch")
        importlib.import_module("loopsight.stores.duckdb_store")
        return
    except ImportError:
        pass
    batch = importlib.import_module("loopsight.collector.batch")
    store = importlib.import_module("loopsight.collector.store")
    ingest = sys.modules.setdefault("loopsight.ingest", types.ModuleType("loopsight.ingest"))
    ingest.batch = batch  # type: ignore[attr-defined]
    sys.modules["loopsight.ingest.batch"] = batch
    shim = types.ModuleType("loopsight.stores.duckdb_store")
    shim.Store = store.Store  # type: ignore[attr-defined]
    shim.DuckDBReader = lambda con: con  # type: ignore[attr-defined]
    sys.modules["loopsight.stores.duckdb_store"] = shim


def _generator() -> Any:
    _compat()
    spec = importlib.util.spec_from_file_location("bench_analytics_ab", ROOT / "bench" / "bench_analytics.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _batches(gen: Any, runs: int, seed: int = 7) -> Any:
    """bench_analytics.fill's batches: time-ordered, BATCH_RUNS runs each, the same seed."""
    import numpy as np

    rng = np.random.default_rng(seed)
    seconds_per_run = gen.DAYS * 86400.0 / runs
    for first in range(0, runs, gen.BATCH_RUNS):
        count = min(gen.BATCH_RUNS, runs - first)
        yield gen.make_batch(rng, count, first * seconds_per_run, (first + count) * seconds_per_run)


# The attributes a producer sends for the typed columns the generator sets directly. ClickHouse
# before the restructure stored no typed column: its materialized columns read them from these.
ATTRIBUTES = {
    "step": "loopsight.step",
    "input_tokens": "gen_ai.usage.input_tokens",
    "output_tokens": "gen_ai.usage.output_tokens",
    "termination_reason": "loopsight.termination.reason",
    "error_type": "error.type",
    "error_class": "loopsight.error.class",
    "attempts": "loopsight.tool.attempts",
    "loop_kind": "loopsight.loop.kind",
    "args_hash": "loopsight.tool.args_hash",
}


def with_attributes(batch: Any) -> Any:
    """``batch`` with ``SpanAttributes`` also holding :data:`ATTRIBUTES` where the typed column is set."""
    import pyarrow as pa

    maps = batch.column("SpanAttributes").to_pylist()
    for column, key in ATTRIBUTES.items():
        for i, value in enumerate(batch.column(column).to_pylist()):
            if value is not None:
                maps[i].append((key, str(value)))
    index = batch.schema.get_field_index("SpanAttributes")
    return batch.set_column(index, batch.schema.field(index), pa.array(maps, batch.schema.field(index).type))


def _fill(gen: Any, url: str, runs: int) -> float:
    from loopsight.stores import open_writer

    started = time.perf_counter()
    writer = open_writer(url)
    try:
        pending = []
        for batch in _batches(gen, runs):
            if not url.startswith("duckdb:"):
                batch = with_attributes(batch)
            pending.append(writer.submit(batch))
            if len(pending) >= 4:
                pending.pop(0).result(timeout=1800)
        for future in pending:
            future.result(timeout=1800)
        if hasattr(writer, "drain"):  # ClickHouse: every batch stored and indexed / derived
            writer.drain(1800)
            with contextlib.suppress(Exception):
                writer.reader()  # the current store: waits for the derive pass covering them
    finally:
        writer.close()
    return time.perf_counter() - started


def _settle_clickhouse(con: Any) -> None:
    """Merge every table's parts (both sides read settled tables) and stop the baseline's read-time indexer."""
    try:  # before the restructure a reader indexed new spans (at most every 5 s) before its question
        run_index = importlib.import_module("loopsight.stores.clickhouse_run_index")
    except ImportError:
        run_index = None
    if run_index is not None:
        run_index.index_new_spans(con)
    names = con.execute(
        "SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree%'"
    ).fetchall()
    for (name,) in names:
        con.command(f"OPTIMIZE TABLE `{name}` FINAL")
    if run_index is not None:
        run_index._LAST[id(con._engine)] = time.monotonic() + 1e9


def _questions(gen: Any, con: Any, sample: str) -> dict[str, Callable[[], Any]]:
    """The questions of both revisions, by name; each tree's own signature decides what exists."""
    from loopsight import analytics

    end = gen.END
    windows = {"24 h": (end - timedelta(days=1), end), "7 days": (gen.START, end)}
    found: dict[str, Callable[[], Any]] = {}

    def add(name: str, fn_name: str, **kwargs: Any) -> None:
        fn = getattr(analytics, fn_name, None)
        if fn is not None:
            found[name] = lambda: fn(con, **kwargs)

    for label, (since, until) in windows.items():
        w = {"since": since, "until": until}
        add(f"overview [{label}]", "overview", **w)
        add(f"terminations [{label}]", "terminations", **w)
        add(f"top_runs_by_tokens [{label}]", "top_runs_by_tokens", limit=10, **w)
        add(f"tool_stats [{label}]", "tool_stats", **w)
        add(f"tool_stats(by_agent) [{label}]", "tool_stats", by_agent=True, **w)
        add(f"list_runs [{label}]", "list_runs", limit=50, **w)
        add(f"list_runs(tool, min_tokens) [{label}]", "list_runs", limit=50, tool="tool_03", min_tokens=9000, **w)
        # (not status="error": its meaning changed, from "did not complete" to "its span failed")
        add(
            f"list_runs(agent, termination_reason) [{label}]",
            "list_runs",
            limit=50,
            agent="agent-03",
            termination_reason="timeout",
            **w,
        )
        add(f"loops [{label}]", "loops", **w)
        add(f"loop_rate [{label}]", "loop_rate", **w)
        add(f"loops_over_time [{label}]", "loops_over_time", **w)
        add(f"top_looping_tools [{label}]", "top_looping_tools", **w)
        add(f"top_looping_args [{label}]", "top_looping_args", **w)
        add(f"loop_run_ids [{label}]", "loop_run_ids", **w)
        # min_samples given: its default went from 50 to 20; now: the stuck part looks at the window's end
        add(f"stalls [{label}]", "stalls", now=until, min_samples=20, **w)
        add(f"time_to_first_tool [{label}]", "time_to_first_tool", **w)
        add(f"burn [{label}]", "burn", **w)
        add(f"burn_agents [{label}]", "burn_agents", **w)
        add(f"burn_runs [{label}]", "burn_runs", **w)
        add(f"burn_curve [{label}]", "burn_curve", **w)
        add(f"models [{label}]", "models", **w)
        _cost_metrics(found, con, label, since, until)
    add("list_runs [no window]", "list_runs", limit=50)
    add("trace_detail [newest run]", "trace_detail", trace_id=sample)
    return found


def _cost_metrics(found: dict[str, Callable[[], Any]], con: Any, label: str, since: Any, until: Any) -> None:
    """The cost alert metrics and the ``/metrics`` cost counters, where the tree has them (#22 on)."""
    try:
        from loopsight.analytics.metrics import MetricSpec, cost_totals, measure
    except ImportError:
        return
    for metric in ("cost", "cost_per_run"):
        spec = MetricSpec(metric) if metric == "cost" else MetricSpec(metric, stat="p95")
        found[f"metric {metric} [{label}]"] = lambda spec=spec: _figures(measure(con, spec, since, until))
    found[f"cost_totals [{label}]"] = lambda: tuple(_figures(g) for g in cost_totals(con, since))


def _figures(value: Any) -> tuple[Any, ...]:
    """A measurement or gauge's figures (floats rounded to the nano-dollar), kept whole in the shape."""
    import dataclasses

    return tuple(
        round(v, 9) if isinstance(v, float) else v for v in dataclasses.asdict(value).values() if not isinstance(v, str)
    )


def _shape(value: Any) -> Any:
    """Enough of an answer to see that both sides answer the same: rows (and which runs), or that per key;
    a tuple (a metric's figures) whole."""
    if isinstance(value, tuple):
        return [list(v) if isinstance(v, tuple) else v for v in value]
    if isinstance(value, list):
        ids = [row.get("trace_id") for row in value if isinstance(row, dict)]
        if any(ids):
            return f"{len(value)} rows, runs {zlib.crc32(json.dumps(ids).encode()):08x}"
        return len(value)
    if isinstance(value, dict):
        keyed = {str(k): _shape(v) for k, v in value.items() if isinstance(v, list | dict)}
        return dict(sorted(keyed.items())) or len(value)
    return type(value).__name__


def same_shape(before: Any, after: Any) -> bool:
    """Equal shapes, where the current answer may hold more keys (cost tiles, say) than the baseline's."""
    if isinstance(before, dict) and isinstance(after, dict):
        return all(k in after and same_shape(v, after[k]) for k, v in before.items())
    return bool(before == after)


def worker(engine: str, path: str, runs: int) -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # the pipe carries only the replies
    gen = _generator()
    from loopsight.stores import open_reader

    url = f"duckdb:///{path}" if engine == "duckdb" else f"chdb://{path}"
    seconds = _fill(gen, url, runs)
    con = open_reader(url, migrate=False) if engine != "duckdb" else open_reader(url)
    if engine != "duckdb":
        _settle_clickhouse(con)
    from loopsight import analytics

    newest = analytics.list_runs(con, limit=1)[0]
    questions = _questions(gen, con, newest["trace_id"])
    size = (
        Path(path).stat().st_size
        if engine == "duckdb"
        else sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())
    )
    reply = {
        "fill_seconds": round(seconds, 2),
        "bytes": size,
        "newest_trace": newest["trace_id"],
        "questions": list(questions),
        "python": sys.executable,
    }
    print(json.dumps(reply), file=out, flush=True)
    for line in sys.stdin:
        ask = json.loads(line)
        if ask.get("stop"):
            break
        fn = questions[ask["q"]]
        started = time.perf_counter()
        try:
            answer = fn()
            error = None
        except Exception as exc:  # reported, the run goes on
            answer, error = None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        took = time.perf_counter() - started
        print(json.dumps({"s": took, "shape": _shape(answer), "error": error}), file=out, flush=True)
    con.close()


# --------------------------------------------------------------------------------------------
# parent side


class Side:
    def __init__(self, name: str, python: str, engine: str, path: str, runs: int) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--worker", engine, "--path", path, "--runs", str(runs)],
            cwd=tempfile.gettempdir(),  # not a tree: only the venv decides what is imported
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=sys.stderr,
            text=True,
        )
        self.ready: dict[str, Any] | None = None

    def wait_ready(self) -> dict[str, Any]:
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line:
            raise SystemExit(f"{self.name} worker failed to start (exit {self.proc.wait()})")
        self.ready = json.loads(line)
        return self.ready

    def ask(self, question: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"q": question}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def stop(self) -> None:
        if self.proc.poll() is None and self.proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.write(json.dumps({"stop": True}) + "\n")
                self.proc.stdin.close()
        self.proc.wait(timeout=300)


def baseline_tree(revision: str, path: Path) -> tuple[Path, bool]:
    """A worktree of ``revision`` at ``path`` with its own installed venv; (path, created here)."""
    python = path / ".venv" / "bin" / "python"
    if path.exists():
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=path, check=True, capture_output=True, text=True
        ).stdout.strip()
        wanted = subprocess.run(
            ["git", "rev-parse", revision], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout.strip()
        if head != wanted:
            raise SystemExit(f"{path} is at {head[:10]}, not {revision}")
        created = False
    else:
        subprocess.run(["git", "worktree", "add", "--detach", str(path), revision], cwd=ROOT, check=True)
        created = True
    if not python.exists() or not (path / ".venv" / ".installed-dev").exists():
        subprocess.run(["make", "install"], cwd=path, check=True)
    return path, created


def run_engine(engine: str, runs: int, rounds: int, pythons: dict[str, str], workdir: Path) -> dict[str, Any]:
    sides: dict[str, Side] = {}
    ready: dict[str, dict[str, Any]] = {}
    try:
        # filled one after the other: each fill has the machine to itself (and its figure is its own)
        for name in ("baseline", "current"):
            store = workdir / f"{engine}-{name}-{runs}" / ("bench.duckdb" if engine == "duckdb" else "ch")
            store.parent.mkdir(parents=True, exist_ok=True)
            sides[name] = Side(name, pythons[name], engine, str(store), runs)
            ready[name] = sides[name].wait_ready()
            print(
                f"[{engine} {runs:,} runs] {name}: filled in {ready[name]['fill_seconds']} s, "
                f"{ready[name]['bytes'] / 1e6:.0f} MB",
                file=sys.stderr,
            )
        if ready["baseline"]["newest_trace"] != ready["current"]["newest_trace"]:
            print("warning: the two stores' newest runs differ (not the same data?)", file=sys.stderr)
        common = [q for q in ready["current"]["questions"] if q in ready["baseline"]["questions"]]
        only = {name: [q for q in ready[name]["questions"] if q not in common] for name in sides}
        times: dict[str, dict[str, list[float]]] = {q: {"baseline": [], "current": []} for q in common}
        shapes: dict[str, dict[str, Any]] = {q: {} for q in common}
        errors: dict[str, dict[str, str]] = {}
        load = [os.getloadavg()[0]]
        for q in common:  # warm-up, and the answers' shapes
            for name, side in sides.items():
                reply = side.ask(q)
                shapes[q][name] = reply["shape"]
                if reply["error"]:
                    errors.setdefault(q, {})[name] = reply["error"]
        for r in range(rounds):
            order = ("baseline", "current") if r % 2 == 0 else ("current", "baseline")
            for q in common:
                for name in order:
                    reply = sides[name].ask(q)
                    times[q][name].append(reply["s"])
            load.append(os.getloadavg()[0])
            print(f"[{engine} {runs:,} runs] round {r + 1}/{rounds}, load {load[-1]:.1f}", file=sys.stderr)
    finally:
        for side in sides.values():
            side.stop()
    rows = []
    for q in common:
        if q in errors:
            rows.append({"question": q, "error": errors[q]})
            continue
        a, b = (statistics.median(times[q][n]) * 1e3 for n in ("baseline", "current"))
        rows.append(
            {
                "question": q,
                "baseline_ms": round(a, 1),
                "current_ms": round(b, 1),
                "ratio": round(b / a, 2) if a else None,
                # the fastest call of each side: less moved by other processes on a shared machine
                "ratio_of_minimums": round(min(times[q]["current"]) / min(times[q]["baseline"]), 2),
                "same_shape": same_shape(shapes[q]["baseline"], shapes[q]["current"]),
                "shape": shapes[q],
                "baseline_samples_ms": [round(t * 1e3, 1) for t in times[q]["baseline"]],
                "current_samples_ms": [round(t * 1e3, 1) for t in times[q]["current"]],
            }
        )
    return {
        "engine": engine,
        "runs": runs,
        "spans": runs * 10,
        "rounds": rounds,
        "fill_seconds": {n: ready[n]["fill_seconds"] for n in ready},
        "store_mb": {n: round(ready[n]["bytes"] / 1e6) for n in ready},
        "only_on_one_side": only,
        "load_average": {"min": min(load), "median": statistics.median(load), "max": max(load)},
        "questions": rows,
    }


def markdown(result: dict[str, Any], baseline: str, current: str = "current") -> str:
    lines = [
        f"{result['engine']}, {result['runs']:,} runs / {result['spans']:,} spans, median of {result['rounds']} "
        f"alternating rounds; fill {result['fill_seconds']['baseline']} s / {result['fill_seconds']['current']} s, "
        f"store {result['store_mb']['baseline']} / {result['store_mb']['current']} MB (baseline / current); "
        f"load average {result['load_average']['min']:.1f}–{result['load_average']['max']:.1f}",
        "",
        f"| question | `{baseline}` ms | {current} ms | {current} / baseline | of the fastest calls |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in result["questions"]:
        if "error" in row:
            lines.append(f"| {row['question']} | failed: {row['error']} | | | |")
            continue
        mark = "" if row["same_shape"] else " (answers differ in shape)"
        ratio = f"{row['ratio']:.2f}" if row["ratio"] is not None else "–"
        if row["ratio"] is not None and row["ratio"] > 1.3:
            ratio = f"**{ratio}**"
        lines.append(
            f"| {row['question']}{mark} | {row['baseline_ms']:.1f} | {row['current_ms']:.1f} | {ratio} "
            f"| {row['ratio_of_minimums']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", help="the earlier revision (9561e7c: before the one-model restructure)")
    parser.add_argument("--baseline-tree", type=Path, help="its worktree (default: a temporary one)")
    parser.add_argument(
        "--current-tree", type=Path, default=ROOT, help="the other side's tree (default: this checkout), installed"
    )
    parser.add_argument("--engines", nargs="+", default=["duckdb"], choices=["duckdb", "chdb"])
    parser.add_argument("--runs", type=int, nargs="+", default=[20_000], help="store sizes; one A/B each")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--workdir", type=Path, help="where the stores go (default: a temporary folder, removed)")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument("--worker", choices=["duckdb", "chdb"], help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.path, args.runs[0])
        return
    if not args.baseline:
        parser.error("--baseline is required")
    tree, created = baseline_tree(
        args.baseline, args.baseline_tree or Path(tempfile.gettempdir()) / f"loopsight-ab-{args.baseline}"
    )
    pythons = {
        "baseline": str(tree / ".venv" / "bin" / "python"),
        "current": str(args.current_tree / ".venv" / "bin" / "python"),
    }
    label = "current"
    if args.current_tree.resolve() != ROOT:
        head = ["git", "rev-parse", "--short", "HEAD"]
        label = (
            "`"
            + subprocess.run(head, cwd=args.current_tree, check=True, capture_output=True, text=True).stdout.strip()
            + "`"
        )
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="loopsight-query-ab-"))
    results = []
    try:
        for runs in args.runs:
            for engine in args.engines:
                result = run_engine(engine, runs, args.rounds, pythons, workdir)
                results.append(result)
                print("\n" + markdown(result, args.baseline, label) + "\n", flush=True)
                if args.json:
                    args.json.write_text(json.dumps({"baseline": args.baseline, "results": results}, indent=1))
                if not args.workdir:
                    for name in ("baseline", "current"):
                        shutil.rmtree(workdir / f"{engine}-{name}-{runs}", ignore_errors=True)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        if created:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)


if __name__ == "__main__":
    main()
