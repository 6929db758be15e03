"""Alert rules on money: ``cost_per_run`` and ``cost`` validate like the others and fire in
spike mode on a real store (issue 22)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cost_world import CACHED_COST, LOOP_RUN_COST, PRICED_RUN_COST, UNCACHED_COST, build

from loopsight.alerts import Evaluator, RulesError
from loopsight.alerts.notify import Notifier
from loopsight.alerts.rules import parse_rules
from loopsight.ingest.otlp import decode_request
from loopsight.stores import ingest_request
from loopsight.stores.duckdb_store import Store

NOW = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
WORLD_COST = PRICED_RUN_COST + LOOP_RUN_COST + UNCACHED_COST + CACHED_COST  # the unpriced run adds nothing


def test_cost_rules_validate():
    (per_run, total) = parse_rules(
        """
[[rules]]
name = "costly"
metric = "cost_per_run"
stat = "max"
window = "1h"
threshold = 0.5

[[rules]]
name = "spend"
metric = "cost"
window = "15m"
threshold = 5
baseline = "1h"
factor = 3
"""
    )
    assert (per_run.spec.stat, per_run.min_samples) == ("max", 1)
    assert (total.spike, total.min_samples, total.spec.filters()) == (True, 1, {})
    with pytest.raises(RulesError, match=r"key 'stat': does not apply to metric 'cost'"):
        parse_rules('[[rules]]\nname = "x"\nmetric = "cost"\nstat = "p95"\nwindow = "1h"\nthreshold = 1\n')
    with pytest.raises(RulesError, match=r"'p90' is not one of p50, p95, max"):
        parse_rules('[[rules]]\nname = "x"\nmetric = "cost_per_run"\nstat = "p90"\nwindow = "1h"\nthreshold = 1\n')


def _ingest(store: Store, minutes_ago: float) -> None:
    world = build(int((NOW - timedelta(minutes=minutes_ago)).replace(tzinfo=UTC).timestamp() * 1e9))
    ingest_request(store, decode_request(world.body(), "application/json", None, 10**9))


@pytest.fixture
def evaluator(tmp_path: Path, store: Store) -> Iterator[Evaluator]:
    rules = tmp_path / "rules.toml"
    rules.write_text(
        """
[[rules]]
name = "spend-spike"
metric = "cost"
window = "10m"
baseline = "30m"
factor = 1.5
threshold = 0.1
notify = ["log"]

[[rules]]
name = "costly-run"
metric = "cost_per_run"
stat = "max"
agent = "pricing-agent"
window = "10m"
threshold = 0.4
notify = ["log"]
"""
    )
    running = Evaluator(store.reader, str(rules), 30, notifier=Notifier(timeout=2.0, retries=0))
    running.notifier.start()
    yield running
    running.stop()


def test_cost_spike_fires_against_its_baseline(store: Store, evaluator: Evaluator) -> None:
    _ingest(store, 25)  # the baseline window [now-40m, now-10m): one world's spend
    _ingest(store, 5)  # the current window: the same spend, 1x the baseline
    spike, costly = evaluator.evaluate_once(NOW)
    assert spike.verdict.current.value == pytest.approx(WORLD_COST, abs=1e-6)
    assert spike.verdict.baseline.value == pytest.approx(WORLD_COST, abs=1e-6)
    assert spike.state.state == "ok" and "below 1.5 x baseline" in spike.verdict.reason
    assert costly.state.state == "firing" and costly.verdict.current.value == pytest.approx(PRICED_RUN_COST, abs=1e-6)
    _ingest(store, 4)  # twice the spend in the current window: 2x the baseline
    spike, _ = evaluator.evaluate_once(NOW + timedelta(seconds=1))
    assert spike.verdict.current.value == pytest.approx(2 * WORLD_COST, abs=1e-6)
    assert spike.state.state == "firing"
    assert spike.verdict.current.samples == 8  # four priced runs per world; the unpriced one is no sample
