"""End to end: decorated agent code -> real OTLP exporter -> real collector -> query API / CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx

AGENT_SCRIPT = textwrap.dedent(
    """
    import sys
    import loopsight

    loopsight.configure(endpoint=sys.argv[1], service_name="e2e-shop")

    @loopsight.tool(idempotent=True)
    def query_order(order_id: str) -> dict:
        return {"order_id": order_id, "state": "shipped"}

    @loopsight.tool
    def cancel_order(order_id: str) -> dict:
        raise loopsight.FatalToolError("forbidden", error_type="permission_denied")

    @loopsight.llm(model="gpt-test")
    def call_model(messages):
        return {"choices": [{"finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 100 * len(messages), "completion_tokens": 7}}

    @loopsight.agent(name="order-assistant", max_steps=5)
    def run(question: str) -> str:
        messages = [question]
        call_model(messages)
        messages.append(query_order(order_id="A-1"))
        call_model(messages)
        try:
            cancel_order(order_id="A-1")
        except loopsight.FatalToolError:
            loopsight.current_run().terminate("fatal_error", fallback="permission")
        return "done"

    run("where is my order?")
    loopsight.shutdown()
    """
)


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loopsight", *args], capture_output=True, text=True, timeout=timeout)


def test_decorated_agent_reaches_the_query_api(collector_server, tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), collector_server.url], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr

    runs = httpx.get(f"{collector_server.url}/api/v1/runs").json()["runs"]
    assert len(runs) == 1
    run = runs[0]
    assert run["agent"] == "order-assistant"
    assert run["service"] == "e2e-shop"
    assert run["termination_reason"] == "fatal_error"
    assert run["status"] == "error"
    assert (run["llm_calls"], run["tool_calls"], run["tool_errors"]) == (2, 2, 1)
    assert run["steps"] == 2
    assert run["input_tokens"] == 100 + 200 and run["output_tokens"] == 14

    detail = httpx.get(f"{collector_server.url}/api/v1/runs/{run['trace_id']}").json()
    spans = {s["name"]: s for s in detail["spans"]}
    assert set(spans) == {
        "invoke_agent order-assistant",
        "chat gpt-test",
        "execute_tool query_order",
        "execute_tool cancel_order",
    }
    cancel = spans["execute_tool cancel_order"]
    assert cancel["kind"] == "tool" and cancel["error_type"] == "permission_denied" and cancel["error_class"] == "fatal"
    assert cancel["step"] == 1
    query = spans["execute_tool query_order"]
    assert query["args_hash"] and len(query["args_hash"]) == 16 and query["step"] == 0
    root = spans["invoke_agent order-assistant"]
    assert root["attributes"]["loopsight.fallback"] == "permission"
    assert root["attributes"]["loopsight.budget.max_steps"] == "5"
    assert all(s["trace_id"] == run["trace_id"] for s in detail["spans"])


def test_demo_traffic_is_listed_by_the_runs_command(collector_server) -> None:
    demo = run_cli("demo", "--endpoint", collector_server.url, "--runs", "12", "--seed", "3", "--speed", "50")
    assert demo.returncode == 0, demo.stderr
    listed = run_cli("runs", "--collector", collector_server.url, "--json", "--limit", "100")
    assert listed.returncode == 0, listed.stderr
    runs = [json.loads(line) for line in listed.stdout.splitlines()]
    assert len(runs) == 12
    assert len({r["agent"] for r in runs}) >= 2
    assert {r["status"] for r in runs} == {"ok", "error"}
    table = run_cli("runs", "--collector", collector_server.url, "--limit", "3")
    assert table.returncode == 0 and "termination" in table.stdout


def test_runs_command_explains_an_unreachable_collector() -> None:
    done = run_cli("runs", "--collector", "http://127.0.0.1:9", "--limit", "1")
    assert done.returncode == 2
    assert "cannot reach the collector at http://127.0.0.1:9" in done.stderr
    assert "Traceback" not in done.stderr


def test_db_upgrade_then_current(tmp_path: Path) -> None:
    db = str(tmp_path / "fresh.duckdb")
    upgraded = run_cli("db", "upgrade", "--db", db, "--create")
    assert upgraded.returncode == 0, upgraded.stderr
    current = run_cli("db", "current", "--db", db)
    assert current.returncode == 0
    assert current.stdout.strip() and current.stdout.strip() in upgraded.stdout
    missing = run_cli("db", "current", "--db", str(tmp_path / "nope.duckdb"))
    assert missing.returncode == 2 and "no DuckDB file" in missing.stderr


def test_db_current_on_a_file_a_collector_holds_says_so(collector_server) -> None:
    done = run_cli("db", "current", "--db", collector_server.db_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is locked by another process" in done.stderr and "applied every migration" in done.stderr
