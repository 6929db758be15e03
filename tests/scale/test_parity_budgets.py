"""The budget advisor answers the same on DuckDB and ClickHouse (chdb), on the hand-computed budget
world (tests/budgets/budget_world.py) stored both ways: DuckDB through loopsight's ingest, ClickHouse
as the contrib exporter writes ``otel_traces``, derived by the ClickHouse store."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "analytics"))
sys.path.insert(0, str(TESTS / "budgets"))

from analytics_fixture import Recorder  # noqa: E402
from budget_world import record  # noqa: E402

from loopsight.analytics.budgets import KINDS, budget_replay, budgets  # noqa: E402
from loopsight.ingest.pipeline import spans_to_request  # noqa: E402

from .test_parity import _same  # noqa: E402


def test_budget_world_is_the_same_on_both_engines(both_stores: Callable[..., tuple[Any, Any]]) -> None:
    recorder = Recorder()
    record(recorder)
    duck, clickhouse = both_stores(spans_to_request(recorder.exporter.get_finished_spans()))
    expected = _same(budgets(duck))
    planner = next(a for a in expected["agents"] if a["agent"] == "planner")
    assert [b["recommended"] for b in planner["budgets"]] == [5, 4, 0.08, 2000]  # not parity of empty answers
    assert _same(budgets(clickhouse)) == expected
    assert _same(budgets(clickhouse, by_service=True)) == _same(budgets(duck, by_service=True))
    for budget in planner["budgets"]:
        for point in budget["curve"]:
            ask = {"kind": budget["kind"], "value": point["value"], "only_cut": False, "limit": 1000}
            assert _same(budget_replay(clickhouse, **ask)) == _same(budget_replay(duck, **ask))
    assert {b["kind"] for b in planner["budgets"]} == set(KINDS)
