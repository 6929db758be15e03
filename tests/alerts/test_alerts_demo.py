"""Rules fire on the demo scenario pack (it injects loops and tool failures) and resolve after."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from alerts_traffic import Call, Hook, Traffic

from loopsight.alerts import Evaluator, Notifier
from loopsight.ingest.pipeline import spans_to_request
from loopsight.react.demo import run_scenarios
from loopsight.stores import ingest_request
from loopsight.stores.duckdb_store import Store


def test_demo_traffic_fires_then_resolves(
    tmp_path: Path, store: Store, traffic: Traffic, hook: Hook, loopsight_spans: Any
) -> None:
    run_scenarios(runs=40, seed=7, concurrency=4, speed=40.0)
    spans = loopsight_spans.spans
    assert ingest_request(store, spans_to_request(spans)) == len(spans)
    end = datetime.fromtimestamp(max(s.end_time for s in spans) / 1e9, UTC).replace(tzinfo=None)
    rules = tmp_path / "rules.toml"
    rules.write_text(f"""
[[rules]]
name = "loop-rate"
metric = "loop_rate"
window = "1h"
threshold = 0.05
notify = ["webhook:{hook.url}"]

[[rules]]
name = "transient-failures"
metric = "tool_fail_rate"
error_class = "transient"
window = "1h"
threshold = 0.01
notify = ["webhook:{hook.url}"]
""")
    evaluator = Evaluator(store.reader, str(rules), 30, notifier=Notifier(timeout=2.0, retries=1, backoff=0.05))
    evaluator.notifier.start()
    try:
        results = evaluator.evaluate_once(end + timedelta(seconds=1))
        assert [(r.rule.name, r.state.state) for r in results] == [
            ("loop-rate", "firing"),
            ("transient-failures", "firing"),
        ]
        loops = results[0].verdict.current
        assert loops.samples == 40 and len(loops.examples) == min(5, round(loops.value * 40)) > 0
        # an hour of clean traffic later, both resolve
        for i in range(10):
            traffic.run(end + timedelta(minutes=70, seconds=i), [Call("search", f"q{i}")])
        traffic.flush()
        results = evaluator.evaluate_once(end + timedelta(minutes=75))
        assert [r.state.state for r in results] == ["resolved", "resolved"]
        assert evaluator.notifier.flush(10)
        assert sorted((b["rule"], b["status"]) for b in hook.wait_for(4)) == [
            ("loop-rate", "firing"),
            ("loop-rate", "resolved"),
            ("transient-failures", "firing"),
            ("transient-failures", "resolved"),
        ]
    finally:
        evaluator.stop()


def test_the_demo_rules_fire_on_the_demo_and_the_crashed_worker_resolves(store: Store, loopsight_spans: Any) -> None:
    """What ``loopsight up --demo`` loads: both rules fire on the first batch; the crashed
    worker's alert resolves once that run is older than its window, the loops' stays."""
    from loopsight.react.demo import DEMO_RULES
    from loopsight.react.scenarios import REQUIRED

    run_scenarios(runs=len(REQUIRED), seed=7, concurrency=4, speed=40.0)  # a full pack: with the crashed worker
    spans = loopsight_spans.spans
    assert ingest_request(store, spans_to_request(spans)) == len(spans)
    end = datetime.fromtimestamp(max(s.end_time for s in spans) / 1e9, UTC).replace(tzinfo=None)
    evaluator = Evaluator(store.reader, str(DEMO_RULES), 10, notifier=Notifier(timeout=2.0, retries=1, backoff=0.05))
    evaluator.notifier.start()
    try:
        first = evaluator.evaluate_once(end + timedelta(seconds=10))
        assert [(r.rule.name, r.state.state) for r in first] == [
            ("demo-loops", "firing"),
            ("demo-crashed-worker", "firing"),
        ]
        assert first[1].verdict.current.value == 1  # the one crashed worker, no other run
        later = evaluator.evaluate_once(end + timedelta(minutes=3))
        assert [(r.rule.name, r.state.state) for r in later] == [
            ("demo-loops", "firing"),
            ("demo-crashed-worker", "resolved"),
        ]
    finally:
        evaluator.stop()
