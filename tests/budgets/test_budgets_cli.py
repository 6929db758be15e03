"""``loopsight budgets`` through its real entry point (on a DuckDB file and on a collector), and the
read client it uses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from analytics_fixture import Recorder
from budget_world import record
from starlette.testclient import TestClient

from loopsight.client import DuckDBSource
from loopsight.collector.app import Settings, create_app
from loopsight.stores.duckdb_store import Store


@pytest.fixture(scope="module")
def world_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A file of its own (the package's store holds its file open for writing)."""
    path = tmp_path_factory.mktemp("budgets-cli") / "budgets.duckdb"
    store = Store.open(str(path))
    recorder = Recorder()
    record(recorder)
    recorder.ingest(store)
    store.close()
    return path


def test_the_read_client_answers_as_the_route(world_file: Path, budget_world: Any) -> None:
    source = DuckDBSource(str(world_file))
    mine = source.budgets(agent="planner")
    with TestClient(create_app(budget_world.store, Settings())) as client:
        route = client.get("/api/v1/budgets", params={"agent": "planner"}).json()
    # other runs (new ids), the same figures; money apart: the package's world prices its model, this file not
    apart = {"budgets", "bad_cost_usd", "cost_distribution"}
    strip = lambda body: [{k: v for k, v in a.items() if k not in apart} for a in body["agents"]]  # noqa: E731
    assert strip(mine) == strip(route)
    assert mine["agents"][0]["bad_cost_usd"] is None and route["agents"][0]["bad_cost_usd"] > 0
    assert [b["recommended"] for b in mine["agents"][0]["budgets"]] == [5, 4, 0.08, 2000]
    assert [r["outcome"] for r in source.budget_runs(agent="planner", kind="steps", value=5)] == [
        "looped",
        "looped",
        "budget",
    ]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    return subprocess.run(
        [sys.executable, "-m", "loopsight", "budgets", *args], capture_output=True, text=True, timeout=120, env=clean
    )


def test_the_budgets_command_prints_the_advice(world_file: Path) -> None:
    done = cli("--db", str(world_file), "--agent", "planner")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "planner: 25 runs, 20 ok, 4 bad (2 looped, 1 stopped by a budget, 1 failed), 1 other" in out
    lines = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│")}
    assert set(lines) == {"steps", "tool_calls", "seconds", "tokens"}
    assert "│ 5 " in lines["steps"] and "4,870 (46.1%)" in lines["steps"] and "2 (100.0%)" in lines["steps"]
    assert "cost saved" in out and "│ —  " in lines["steps"]  # this file prices nothing: unknown, not $0
    assert "│ 0.08 " in lines["seconds"] and "│ 2,000 " in lines["tokens"]
    assert "ReactConfig" not in out  # these runs did not come from loopsight.react
    as_json = cli("--db", str(world_file), "--agent", "planner", "--json")
    assert json.loads(as_json.stdout)["agents"][0]["ok_runs"] == 20
    with_curve = cli("--db", str(world_file), "--agent", "tiny", "--curve")
    assert "fewer than 20 successful runs in the window (3)" in with_curve.stdout
    assert with_curve.stdout.count("┏") == 5  # the advice and one curve per budget
    assert "no runs of agent nobody in the window" in cli("--db", str(world_file), "--agent", "nobody").stdout
    bad = cli("--db", str(world_file), "--since", "yesterday")
    assert bad.returncode == 2 and "--since 'yesterday' is not an ISO-8601 time" in bad.stderr  # as runs says it


def test_the_budgets_command_reads_a_collector(start_collector: Any, world_file: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(world_file.read_bytes())
    server = start_collector(db_path=str(copy))
    done = cli("--collector", server.url, "--agent", "planner", "--json")
    assert done.returncode == 0, done.stderr
    assert [b["recommended"] for b in json.loads(done.stdout)["agents"][0]["budgets"]] == [5, 4, 0.08, 2000]
