"""Runs of the reference loop (loopsight.react): the advice comes in ReactConfig's field names, and
a ReactConfig built from it does what the replay said (the successful runs unchanged, the looping
ones stopped earlier)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopsight import react
from loopsight.analytics.budgets import budgets
from loopsight.ingest.pipeline import spans_to_request
from loopsight.react.llm import ScriptedLLM, call, turn
from loopsight.react.retry import RetryPolicy
from loopsight.stores import ingest_request
from loopsight.stores.duckdb_store import Store

SCHEMA = {"type": "object", "required": ["order_id"], "properties": {"order_id": {"type": "string"}}}
STARTING = react.ReactConfig(
    max_steps=10, max_tool_calls=20, max_seconds=60, max_tokens=50_000, retry=RetryPolicy(base=0.001), seed=1
)


def query_order(order_id: str) -> dict[str, str]:
    return {"order_id": order_id, "status": "shipped"}


def traffic(config: react.ReactConfig) -> list[react.RunResult]:
    """20 questions answered after two lookups, and 3 where the model asks for the same order forever."""
    tools = [react.Tool("query_order", query_order, "Look an order up.", SCHEMA)]
    results = []
    for i in range(20):
        script = [turn(call("query_order", order_id=f"1{i:05d}")), turn(call("query_order", order_id=f"2{i:05d}"))]
        llm = ScriptedLLM([*script, f"Both orders {i} have shipped."])
        results.append(react.ReactAgent(llm, tools, config, name="order-assistant").run("Where are my orders?"))
    for _ in range(3):
        llm = ScriptedLLM(lambda messages, tools: turn(call("query_order", order_id="100234")))
        results.append(react.ReactAgent(llm, tools, config, name="order-assistant").run("Where is 100234?"))
    return results


def advice(spans: Any, path: Path) -> dict[str, Any]:
    store = Store.open(str(path))
    try:
        ingest_request(store, spans_to_request(spans.spans))
        (entry,) = budgets(store.reader())["agents"]
        return entry
    finally:
        store.close()


def test_reference_loop_advice_maps_onto_react_config(loopsight_spans: Any, tmp_path: Path) -> None:
    before = traffic(STARTING)
    assert [r.termination_reason for r in before].count("completed") == 20
    assert {r.termination_reason for r in before[20:]} == {"loop_detected"}
    entry = advice(loopsight_spans, tmp_path / "before.duckdb")
    assert (entry["agent"], entry["reference_loop"], entry["ok_runs"], entry["looped_runs"]) == (
        "order-assistant",
        True,
        20,
        3,
    )
    by_kind = {b["kind"]: b for b in entry["budgets"]}
    assert {k: b["configured"] for k, b in by_kind.items()} == {
        "steps": 10,
        "tool_calls": 20,
        "seconds": 60.0,
        "tokens": 50_000,
    }
    steps = by_kind["steps"]
    # every ok run took 3 model turns (two lookups, then the answer): max_steps 3 cuts none of them
    assert steps["recommended"] == 3 and steps["react_field"] == "max_steps"
    assert steps["at_recommended"]["looped_runs_cut"] == 3
    assert steps["summary"].startswith("max_steps 3: 100 % of looping runs stopped")
    assert by_kind["tool_calls"]["recommended"] == 2

    # apply it: the same traffic under the recommended budgets (but time: the fixture's fake clock
    # measured the runs, 1 ms per reading, while the loop's deadline runs on the real clock)
    loopsight_spans.clear()
    chosen = {b["react_field"]: b["recommended"] for b in entry["budgets"] if b["kind"] != "seconds"}
    tuned = react.ReactConfig(**chosen, retry=RetryPolicy(base=0.001), seed=1)
    after = traffic(tuned)
    assert [r.termination_reason for r in after[:20]] == ["completed"] * 20
    assert [r.answer for r in after[:20]] == [r.answer for r in before[:20]]
    looping_before = sum(r.summary.total_tokens for r in before[20:])
    looping_after = sum(r.summary.total_tokens for r in after[20:])
    assert all(r.termination_reason != "completed" for r in after[20:])
    assert all(r.summary.steps <= 3 for r in after[20:]) and looping_after < looping_before
