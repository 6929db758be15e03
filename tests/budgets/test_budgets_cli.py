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


def test_a_token_budget_of_millions_is_advised_as_a_python_integer(tmp_path: Path) -> None:
    """The advice line is pasted into code: ``max_tokens=1200000``, never ``1.2e+06`` (a float that
    ReactConfig refuses); the summary writes the value as every figure is written (``1,200,000``)."""
    import ast

    from cost_world import Trace, World, _attr

    from loopsight.react import ReactConfig

    traces = {}
    for i in range(20):  # 20 successful runs of the reference loop, 1,100,010 tokens each
        trace = traces[f"ok{i}"] = Trace(1_700_000_000 * 10**9 + i * 10**9)
        run = os.urandom(8).hex()
        trace.chat(run, 0, "openai", "gpt-4o", (1_100_000, 0, 0, 10))
        trace.run_span(run, "long-reader", "completed")
        trace.spans[-1]["attributes"] += [
            _attr("loopsight.budget.max_steps", 12),
            _attr("loopsight.budget.max_tokens", 2_000_000),
        ]
    spans = tmp_path / "spans.json"
    spans.write_bytes(World(traces, 0).body())
    db = str(tmp_path / "long.duckdb")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    loaded = subprocess.run(
        [sys.executable, "-m", "loopsight", "ingest", str(spans), "--db", db], env=clean, check=False
    )
    assert loaded.returncode == 0

    done = cli("--db", db, "--agent", "long-reader", "--since", "2023-01-01")
    assert done.returncode == 0, done.stderr
    (line,) = [text for text in done.stdout.splitlines() if text.startswith("loopsight.react: ReactConfig(")]
    call = ast.parse(line.removeprefix("loopsight.react: ").split("  ")[0], mode="eval").body
    assert isinstance(call, ast.Call)
    advised = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    assert advised["max_tokens"] == 1_200_000 and isinstance(advised["max_tokens"], int)
    ReactConfig(**advised)  # the line works as written
    answer = json.loads(cli("--db", db, "--agent", "long-reader", "--since", "2023-01-01", "--json").stdout)
    (tokens,) = [b for b in answer["agents"][0]["budgets"] if b["kind"] == "tokens"]
    assert tokens["recommended"] == 1_200_000 and tokens["summary"].startswith("max_tokens 1,200,000: ")
