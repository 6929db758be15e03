"""Benchmark: every analytics query behind a dashboard page, on 1 million spans / 100,000 runs.

The store is filled through the real ``Store`` writer (Arrow batches, the same commit and
run resolution as ingest), with runs spread over 7 days and ingested in time order: 10 spans per run (the run span,
4 model calls, 5 tool calls), 12 agents, 3 services, 20 tools, ~6 % failed tool calls
with retries, ~3 % runs with a loop-guard hit; each run on one of three models (gpt-4o,
gpt-4o-mini, claude-sonnet-4-5) with the prompt cache serving part of every later step's input. Each query runs ``--repeat`` times after a
warm-up; the median is compared with a bare DuckDB scan of the same columns
(``SELECT min(col), ... FROM spans``) measured in the same process.

    .venv/bin/python bench/bench_analytics.py                  # 100,000 runs, 1 M spans
    .venv/bin/python bench/bench_analytics.py --runs 10000     # quick
    .venv/bin/python bench/bench_analytics.py --db /tmp/a.duckdb --keep   # reuse the file next time
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from loopsight import analytics
from loopsight.ingest.batch import ATTR_MAP, SCHEMA
from loopsight.stores.duckdb_store import DuckDBReader, Store

SPANS_PER_RUN = 10
# Per run: the run span, then steps 0..3 each with a chat span and tool calls (two at step 0).
TYPES = ["agent", "llm", "tool", "tool", "llm", "tool", "llm", "tool", "llm", "tool"]
STEPS = [None, 0, 0, 0, 1, 1, 2, 2, 3, 3]
AGENTS = [f"agent-{i:02d}" for i in range(12)]
SERVICES = ["svc-a", "svc-b", "svc-c"]
TOOLS = [f"tool_{i:02d}" for i in range(20)]
REASONS = ["completed", "max_steps", "timeout", "loop_detected", "repeated_error", "fatal_error", "token_budget"]
REASON_WEIGHTS = [0.82, 0.05, 0.04, 0.03, 0.02, 0.02, 0.02]
CLASSES = ["transient", "invalid_argument", "permanent", "fatal", "empty_result", "garbage"]
START = datetime(2026, 1, 1)
DAYS = 7
END = START + timedelta(days=DAYS)
BATCH_RUNS = 5000
MODELS = [("openai", "gpt-4o"), ("openai", "gpt-4o-mini"), ("anthropic", "claude-sonnet-4-5")]


def _hex_ids(rng: np.random.Generator, count: int, size: int) -> np.ndarray:
    raw = rng.integers(0, 256, size=(count, size), dtype=np.uint8).tobytes()
    return np.array([raw[i * size : (i + 1) * size].hex() for i in range(count)], dtype=object)


def _map(keys: list[np.ndarray], values: list[np.ndarray]) -> pa.Array:
    """A MAP column with len(keys) entries per row, built from flat arrays."""
    rows = len(keys[0])
    per_row = len(keys)
    flat_keys = np.stack(keys, axis=1).reshape(-1)
    flat_values = np.stack(values, axis=1).reshape(-1)
    offsets = pa.array(np.arange(0, rows * per_row + 1, per_row, dtype=np.int32))
    return pa.MapArray.from_arrays(
        offsets, pa.array(flat_keys, pa.string()), pa.array(flat_values, pa.string()), type=ATTR_MAP
    )


def make_batch(rng: np.random.Generator, runs: int, first_s: float = 0.0, last_s: float = DAYS * 86400.0) -> pa.Table:
    """``runs`` complete runs starting between ``first_s`` and ``last_s`` seconds after START, in start order."""
    n = runs * SPANS_PER_RUN
    kinds = np.tile(np.array(TYPES, dtype=object), runs)
    is_agent, is_llm, is_tool = kinds == "agent", kinds == "llm", kinds == "tool"
    step = np.tile(np.array([-1 if s is None else s for s in STEPS]), runs)

    trace_ids = np.repeat(_hex_ids(rng, runs, 16), SPANS_PER_RUN)
    span_ids = _hex_ids(rng, n, 8)
    run_ids = np.repeat(span_ids[::SPANS_PER_RUN], SPANS_PER_RUN)
    parents = np.where(is_agent, "", run_ids)

    duration_ms = np.where(is_llm, rng.uniform(300, 2500, n), rng.lognormal(4.5, 1.0, n))
    child = duration_ms.reshape(runs, SPANS_PER_RUN)[:, 1:]
    offsets_ms = np.concatenate([np.zeros((runs, 1)), np.cumsum(child, axis=1)[:, :-1]], axis=1)
    run_ms = child.sum(axis=1) + rng.uniform(1, 50, runs)
    duration_ms.reshape(runs, SPANS_PER_RUN)[:, 0] = run_ms
    start_us = (np.sort(rng.uniform(first_s, last_s, runs)) * 1e6).astype(np.int64)
    begin = (
        np.repeat(start_us, SPANS_PER_RUN)
        + np.concatenate([np.zeros((runs, 1)), offsets_ms], axis=1).reshape(-1).astype(np.int64) * 1000
    )
    begin += int((START - datetime(1970, 1, 1)).total_seconds() * 1e6)
    duration_ns = (duration_ms * 1e6).astype(np.int64)

    agent = np.repeat(rng.choice(AGENTS, runs), SPANS_PER_RUN)
    service = np.repeat(rng.choice(SERVICES, runs), SPANS_PER_RUN)
    tool = np.where(is_tool, rng.choice(TOOLS, n), None)
    failed = is_tool & (rng.random(n) < 0.06)
    attempts = np.where(is_tool, np.where(failed, rng.integers(1, 4, n), 1), 0)
    loop = is_tool & np.repeat(rng.random(runs) < 0.03, SPANS_PER_RUN) & (step == 3)
    reason = np.repeat(rng.choice(REASONS, runs, p=REASON_WEIGHTS), SPANS_PER_RUN)
    run_failed = np.repeat(rng.random(runs) < 0.05, SPANS_PER_RUN)
    status = np.where(failed | (is_agent & run_failed), "Error", "Unset")
    input_tokens = np.where(is_llm, 600 + step * 450 + rng.integers(0, 300, n), 0)
    output_tokens = np.where(is_llm, rng.integers(40, 400, n), 0)
    # the previous step's prompt served from the cache (in 128-token blocks), from step 1 on
    cache_read = np.where(is_llm & (step > 0), (600 + (step - 1) * 450) // 128 * 128, 0)
    which = np.repeat(rng.integers(0, len(MODELS), runs), SPANS_PER_RUN)
    model = np.array([m for _, m in MODELS], dtype=object)[which]
    provider = np.array([p for p, _ in MODELS], dtype=object)[which]
    error_class = np.where(failed, rng.choice(CLASSES, n), None)

    operation = np.select([is_agent, is_llm, is_tool], ["invoke_agent", "chat", "execute_tool"], "other").astype(object)
    name = np.where(
        is_agent,
        "invoke_agent " + agent.astype(str),
        np.where(is_llm, "chat " + model.astype(str), "execute_tool " + np.where(is_tool, tool, "").astype(str)),
    )
    detail_key = np.where(
        is_agent, "gen_ai.agent.name", np.where(is_llm, "gen_ai.request.model", "gen_ai.tool.name")
    ).astype(object)
    detail_value = np.where(is_agent, agent, np.where(is_llm, model, tool)).astype(object)

    retries = np.maximum(attempts - 1, 0)
    event_counts = retries + loop.astype(int)
    event_offsets = np.concatenate([[0], np.cumsum(event_counts)]).astype(np.int32)
    total_events = int(event_offsets[-1])
    event_owner = np.repeat(np.arange(n), event_counts)
    event_names = np.where(
        loop[event_owner] & (np.arange(total_events) == event_offsets[1:][event_owner] - 1), "loop_detected", "retry"
    )
    event_ts = pa.array(begin[event_owner], pa.timestamp("us"))
    no_attrs = pa.MapArray.from_arrays(
        pa.array(np.zeros(total_events + 1, dtype=np.int32)),
        pa.array([], pa.string()),
        pa.array([], pa.string()),
        type=ATTR_MAP,
    )
    events_struct = pa.StructArray.from_arrays(
        [event_ts, pa.array(event_names, pa.string()), no_attrs], fields=list(SCHEMA.field("Events").type.value_type)
    )
    events = pa.ListArray.from_arrays(pa.array(event_offsets), events_struct, type=SCHEMA.field("Events").type)

    def text(values: Any) -> pa.Array:
        return pa.array(values, pa.string())

    columns: dict[str, pa.Array] = {
        "Timestamp": pa.array(begin, pa.timestamp("us")),
        "TraceId": text(trace_ids),
        "SpanId": text(span_ids),
        "ParentSpanId": text(parents),
        "TraceState": text(np.full(n, "", dtype=object)),
        "SpanName": text(name.astype(object)),
        "SpanKind": text(np.where(is_llm, "Client", "Internal").astype(object)),
        "ServiceName": text(service),
        "ResourceAttributes": _map([np.full(n, "service.name", dtype=object)], [service]),
        "ScopeName": text(np.full(n, "loopsight", dtype=object)),
        "ScopeVersion": text(np.full(n, "0.1.0", dtype=object)),
        "SpanAttributes": _map(
            [np.full(n, "gen_ai.operation.name", dtype=object), detail_key], [operation, detail_value]
        ),
        "Duration": pa.array(duration_ns, pa.int64()),
        "StatusCode": text(status.astype(object)),
        "StatusMessage": text(np.full(n, "", dtype=object)),
        "Events": events,
        "Links": pa.array([[]] * n, SCHEMA.field("Links").type),
        "span_type": text(kinds),
        "operation": text(operation),
        "agent": text(np.where(is_agent, agent, None)),
        "run_id": text(run_ids),
        "step": pa.array(np.where(step >= 0, step, 0), pa.int32(), mask=step < 0),
        "tool": text(tool),
        "args_hash": text(np.where(is_tool, np.char.add("h", rng.integers(0, 50, n).astype(str)).astype(object), None)),
        "args_frame": pa.nulls(n, pa.uint64()),
        "model": text(np.where(is_llm, model, None)),
        "error_type": text(np.where(failed, "timeout", None)),
        "error_class": text(error_class),
        "input_tokens": pa.array(input_tokens, pa.int64(), mask=~is_llm),
        "output_tokens": pa.array(output_tokens, pa.int64(), mask=~is_llm),
        "termination_reason": text(np.where(is_agent, reason, None)),
        "fallback": pa.nulls(n, pa.string()),
        "loop_kind": text(np.where(loop, "exact", None)),
        "attempts": pa.array(attempts, pa.int32(), mask=~is_tool),
        "end_time": pa.array(begin + duration_ns // 1000, pa.timestamp("us")),
        "provider": text(np.where(is_llm, provider, None)),
        "cache_read_tokens": pa.array(cache_read, pa.int64(), mask=~is_llm),
    }
    return pa.Table.from_arrays(
        [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in SCHEMA], schema=SCHEMA
    )


def fill(path: str, runs: int, seed: int = 7) -> float:
    """Write ``runs`` runs into a fresh store at ``path`` through the Store writer; returns seconds."""
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    store = Store.open(path)
    try:
        pending = []
        seconds_per_run = DAYS * 86400.0 / runs
        for first in range(0, runs, BATCH_RUNS):
            count = min(BATCH_RUNS, runs - first)
            # Ingest order follows time, as it does in a live collector (row groups stay time-clustered).
            batch = make_batch(rng, count, first * seconds_per_run, (first + count) * seconds_per_run)
            pending.append(store.submit(batch))
            if len(pending) >= 4:
                pending.pop(0).result(timeout=600)
        for future in pending:
            future.result(timeout=600)
    finally:
        store.close()
    return time.perf_counter() - started


@dataclass
class Query:
    page: str
    name: str
    run: Callable[[duckdb.DuckDBPyConnection], Any]
    columns: tuple[str, ...]
    variant: bool = False  # another filter setting of a page query: reported, not added to the page
    table: str = "spans"  # the table the bare scan reads (a derived table for the questions that read one)


RUN_COLS = (
    "span_type",
    "SpanId",
    "run_id",
    "TraceId",
    "Timestamp",
    "agent",
    "ServiceName",
    "StatusCode",
    "termination_reason",
    "Duration",
)
CHILD_COLS = (
    "TraceId",
    "run_id",
    "span_type",
    "StatusCode",
    "input_tokens",
    "output_tokens",
    "step",
    "attempts",
    "loop_kind",
)
TOOL_COLS = (
    "span_type",
    "tool",
    "TraceId",
    "SpanId",
    "run_id",
    "agent",
    "Timestamp",
    "ServiceName",
    "StatusCode",
    "error_class",
    "attempts",
    "Duration",
)


def queries(con: duckdb.DuckDBPyConnection, window: dict[str, datetime | None]) -> list[Query]:
    """Every query behind a page, with the columns it reads."""
    sample = con.execute(
        'SELECT "TraceId" FROM spans WHERE span_type = \'agent\' ORDER BY "Timestamp" DESC LIMIT 1'
    ).fetchone()[0]
    w = window
    found = [
        Query("Overview", "overview", lambda c: analytics.overview(c, **w), RUN_COLS + CHILD_COLS),
        Query("Overview", "terminations", lambda c: analytics.terminations(c, **w), RUN_COLS),
        Query(
            "Overview",
            "top_runs_by_tokens",
            lambda c: analytics.top_runs_by_tokens(c, limit=10, **w),
            RUN_COLS + CHILD_COLS,
        ),
        Query("Overview", "tool_stats", lambda c: analytics.tool_stats(c, **w), TOOL_COLS),
        Query("Runs", "list_runs", lambda c: analytics.list_runs(c, limit=50, **w), RUN_COLS + CHILD_COLS),
        Query("Runs", "list_runs(no window)", lambda c: analytics.list_runs(c, limit=50), RUN_COLS + CHILD_COLS, True),
        Query(
            "Runs",
            "list_runs(tool, min_tokens)",
            lambda c: analytics.list_runs(c, limit=50, tool="tool_03", min_tokens=9000, **w),
            RUN_COLS + CHILD_COLS + ("tool",),
            True,
        ),
        Query(
            "Runs",
            "list_runs(agent, status=error)",
            lambda c: analytics.list_runs(c, limit=50, agent="agent-03", status="error", **w),
            RUN_COLS + CHILD_COLS,
            True,
        ),
        Query("Tools", "tool_stats(by_agent)", lambda c: analytics.tool_stats(c, by_agent=True, **w), TOOL_COLS),
        Query(
            "Run timeline",
            "trace_detail",
            lambda c: analytics.trace_detail(c, sample),
            ("TraceId", *CHILD_COLS, "SpanAttributes", "Events"),
        ),
    ]
    found += detection_queries(w)
    found += budget_queries(w)
    found += cost_queries(w)
    return found


COST_COLS = ("trace_id", "run_id", "agent", "service", "started_at", "ts", "provider", "model", "input_tokens")


def cost_queries(w: dict[str, datetime | None]) -> list[Query]:
    """The questions only about money (issue 22), where they exist; the others above carry costs too."""
    found = []
    try:
        from loopsight.analytics.metrics import MetricSpec, cost_totals, measure
    except ImportError:
        return found
    if hasattr(analytics, "models"):
        found.append(Query("Cost", "models", lambda c: analytics.models(c, **w), COST_COLS, table="run_calls"))
    since, until = w["since"] or START, w["until"] or END
    for spec in (MetricSpec("cost_per_run", stat="p95"), MetricSpec("cost")):
        found.append(
            Query(
                "Cost",
                f"alert metric {spec.metric}",
                lambda c, spec=spec: measure(c, spec, since, until),
                COST_COLS,
                True,
                table="run_calls",
            )
        )
    found.append(
        Query("Cost", "cost_totals (/metrics)", lambda c: cost_totals(c, since), COST_COLS, True, table="run_calls")
    )
    return found


def budget_queries(w: dict[str, datetime | None]) -> list[Query]:
    """The budget advisor's page: every agent's curves, and one budget replayed run by run."""
    try:
        module = importlib.import_module("loopsight.analytics.budgets")
    except ImportError:
        return []
    step_cols = ("trace_id", "run_id", "agent", "service", "started_at", "ordinal", "tokens", "cum_tool_calls")
    return [
        Query("Budgets", "budgets", lambda c: module.budgets(c, **w), step_cols, table="run_step_totals"),
        Query(
            "Budgets",
            "budget_replay(agent, steps=3)",
            lambda c: module.budget_replay(c, kind="steps", value=3, agent="agent-03", **w),
            step_cols,
            table="run_step_totals",
        ),
    ]


def detection_queries(w: dict[str, datetime | None]) -> list[Query]:
    """The detection engineer's questions, where their modules exist."""
    found = []
    loop_cols = (*TOOL_COLS, "args_hash", "args_frame", "step", "input_tokens", "output_tokens", "end_time")
    # stalls read the per-span stall facts kept at ingest (run_members), plus the in-flight spans
    member_cols = (
        "trace_id",
        "run_id",
        "span_id",
        "agent",
        "service",
        "started_at",
        "span_type",
        "what",
        "call_ms",
        "backoff_ms",
        "gap_ms",
    )
    for module_name, names, page in (
        ("loops", ("loops", "loop_rate", "loops_over_time", "top_looping_tools"), "Loops"),
        ("stalls", ("stalls",), "Stalls"),
        ("burn", ("burn", "burn_curve"), "Token burn"),
    ):
        try:
            # import_module: the package re-exports functions named like the modules.
            module = importlib.import_module(f"loopsight.analytics.{module_name}")
        except ImportError:
            continue
        for name in names:
            if hasattr(module, name):
                fn = getattr(module, name)
                if name == "stalls":
                    found.append(Query(page, name, lambda c, fn=fn: fn(c, **w), member_cols, table="run_members"))
                else:
                    found.append(Query(page, name, lambda c, fn=fn: fn(c, **w), loop_cols))
    return found


def median_seconds(fn: Callable[[], Any], repeat: int) -> float:
    fn()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def bare_scan(con: duckdb.DuckDBPyConnection, columns: tuple[str, ...], table: str = "spans") -> None:
    con.execute("SELECT " + ", ".join(f'min("{c}")' for c in dict.fromkeys(columns)) + f" FROM {table}").fetchall()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--db", help="DuckDB file to fill (or reuse with --keep)")
    parser.add_argument("--keep", action="store_true", help="keep the file, and reuse it if it already holds the runs")
    args = parser.parse_args(argv)

    directory = tempfile.mkdtemp(prefix="bench-analytics-")
    path = args.db or os.path.join(directory, "bench.duckdb")
    reuse = args.keep and Path(path).exists()
    if not reuse:
        Path(path).unlink(missing_ok=True)
        seconds = fill(path, args.runs)
        print(f"filled {args.runs:,} runs / {args.runs * SPANS_PER_RUN:,} spans through Store in {seconds:.1f} s")
    # the questions take a store reader (the restructure); it passes execute() through for the scans
    con = DuckDBReader(duckdb.connect(path, read_only=True))
    spans, runs = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE span_type = 'agent' AND \"SpanId\" = run_id) FROM spans"
    ).fetchone()
    print(
        f"store: {spans:,} spans, {runs:,} runs, {Path(path).stat().st_size / 1e6:.0f} MB, duckdb {duckdb.__version__}, "
        f"{os.cpu_count()} CPUs, median of {args.repeat}, load average {os.getloadavg()[0]:.1f}"
    )

    end = END
    windows = {
        "last 24 h": {"since": end - timedelta(days=1), "until": end},
        "all 7 days": {"since": START, "until": end},
        "no window": {"since": None, "until": None},
    }
    for label, window in windows.items():
        print(f"\n## window: {label}\n")
        print("| page | query | median ms | bare scan ms | ratio |")
        print("|---|---|---:|---:|---:|")
        pages: dict[str, float] = {}
        for q in queries(con, window):
            try:
                seconds = median_seconds(lambda q=q: q.run(con), args.repeat)
            except Exception as exc:  # another engineer's query in progress must not stop the benchmark
                print(f"| {q.page} | {q.name} | failed: {type(exc).__name__}: {str(exc).splitlines()[0][:80]} | | |")
                continue
            scan = median_seconds(lambda q=q: bare_scan(con, q.columns, q.table), args.repeat)
            if not q.variant:
                pages[q.page] = pages.get(q.page, 0.0) + seconds
            label = f"{q.name} (variant)" if q.variant else q.name
            label = label if q.table == "spans" else f"{label} (scan: {q.table})"
            print(f"| {q.page} | {label} | {seconds * 1e3:.0f} | {scan * 1e3:.0f} | {seconds / scan:.1f}x |")
        print("\n| page | all its queries, ms | goal < 1000 ms |")
        print("|---|---:|---|")
        for page, seconds in pages.items():
            print(f"| {page} | {seconds * 1e3:.0f} | {'ok' if seconds < 1 else 'OVER'} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    con.close()
    if not args.keep and not args.db:
        Path(path).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
