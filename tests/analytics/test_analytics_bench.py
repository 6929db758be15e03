"""The benchmark's generated store is what it claims: whole runs, resolved like ingested ones."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import duckdb

from loopsight import analytics
from loopsight.stores.duckdb_store import DuckDBReader

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_analytics.py"


def test_bench_store_holds_whole_runs(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_analytics", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # dataclasses look their module up there
    spec.loader.exec_module(bench)
    path = str(tmp_path / "bench.duckdb")
    bench.fill(path, 100)
    with duckdb.connect(path, read_only=True) as raw:
        con = DuckDBReader(raw)
        assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM spans").fetchone() == (1000, 100)
        runs = analytics.list_runs(con, limit=1000)
        assert len(runs) == 100
        assert all((r["steps"], r["llm_calls"], r["tool_calls"]) == (4, 4, 5) for r in runs)
        assert sum(t["calls"] for t in analytics.tool_stats(con)) == 500
        started = [r["started_at"] for r in runs]
        assert started == sorted(started, reverse=True)
        tiles = analytics.overview(con, since=bench.START, until=bench.END)["tiles"]
        assert tiles["runs"]["value"] == 100
