"""The demo scenario pack: coverage of every reason, class and kind, in spans and in the summary."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from loopsight import analytics
from loopsight import attributes as A
from loopsight.ingest.pipeline import spans_to_request
from loopsight.react.demo import DemoSummary, run_scenarios
from loopsight.react.scenarios import REQUIRED, SCENARIOS, plan
from loopsight.stores import ingest_request
from loopsight.stores.duckdb_store import Store


def test_plan_is_deterministic_and_contains_the_required_scenarios():
    assert [s.name for s in plan(40, 7)] == [s.name for s in plan(40, 7)]
    assert set(REQUIRED) <= {s.name for s in plan(40, 7)}
    assert len(plan(5, 1)) == 5 and set(REQUIRED) <= set(SCENARIOS)


def test_default_demo_covers_every_reason_class_and_kind_in_spans(loopsight_spans):
    summary = run_scenarios(runs=40, seed=7, concurrency=4, speed=40.0)
    assert summary.runs == 40
    runs = loopsight_spans.by_name("invoke_agent")
    assert len(runs) == 40
    reasons = Counter(s.attributes[A.TERMINATION_REASON] for s in runs)
    assert set(reasons) == set(A.TERMINATION_REASONS)
    assert reasons["completed"] >= 20  # most runs complete
    assert reasons == summary.by_reason
    tools = loopsight_spans.by_name("execute_tool")
    classes = {s.attributes.get(A.ERROR_CLASS) for s in tools} - {None}
    retry_classes = {e.attributes[A.ERROR_CLASS] for s in tools for e in s.events if e.name == "retry"}
    assert classes == set(A.ERROR_CLASSES) and retry_classes == {"transient"}
    # the guard marks what it blocks; no_progress is found by the collector from result hashes
    assert {s.attributes.get(A.LOOP_KIND) for s in tools} - {None} == set(A.LOOP_KINDS) - {"no_progress"}
    assert sum(A.TOOL_RESULT_HASH in s.attributes for s in tools) > len(tools) / 2
    modes = {s.attributes[A.CONTEXT_MODE] for s in loopsight_spans.by_name("chat")}
    assert modes == set(A.CONTEXT_MODES)
    assert len({s.attributes[A.AGENT_NAME] for s in runs}) >= 4
    assert set(summary.error_classes) == set(A.ERROR_CLASSES)
    assert set(summary.loop_kinds) == set(A.LOOP_KINDS) - {"no_progress"}
    assert "termination:" in str(summary) and summary.as_dict()["runs"] == 40


def test_the_demo_stores_a_loop_of_every_kind(tmp_path: Path, loopsight_spans) -> None:
    """What ``make run`` shows: the collector finds every loop kind in a full pack, ``no_progress``
    (one stale answer to different searches) included, which no guard marks."""
    run_scenarios(runs=len(REQUIRED), seed=7, concurrency=4, speed=40.0)
    store = Store.open(str(tmp_path / "demo.duckdb"))
    try:
        assert ingest_request(store, spans_to_request(loopsight_spans.spans)) == len(loopsight_spans.spans)
        loops = analytics.loops(store.reader(), limit=1000)
    finally:
        store.close()
    assert {loop["kind"] for loop in loops} == set(A.LOOP_KINDS)
    (stale,) = [loop for loop in loops if loop["kind"] == "no_progress"]
    assert (stale["agent"], stale["tool"], stale["count"]) == ("research-agent", "web_search", 4)


def test_summary_prints_for_the_cli():
    s = DemoSummary()
    s.add("x", "order-assistant", None)
    assert s.by_reason == {"cancelled": 1} and "cancelled 1" in str(s) and s.__rich__()
