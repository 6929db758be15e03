"""An llm span nested under an llm span counts and is numbered the same on ClickHouse as on DuckDB.

The official openai-v2 instrumentor opens its ``chat`` span inside our ``@loopsight.llm``
span: one model call per turn, the nested span takes its parent's step, stalls do not judge
it. One run whose producer gives steps, one whose producer gives none (steps derived).
Real OTel SDK spans; DuckDB through loopsight's ingest, ClickHouse as the exporter writes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from nested_model_spans import TURNS, model_in_tool_spans, nested_model_spans

from loopsight import analytics
from loopsight.ingest.pipeline import spans_to_request

from .test_parity import _same


def test_nested_model_calls_are_the_same_on_both_stores(both_stores: Callable[..., tuple[Any, Any]]) -> None:
    duck, clickhouse = both_stores(spans_to_request(nested_model_spans((("helper", True), ("unnumbered", False)))))

    runs = analytics.list_runs(duck)
    assert [(r["agent"], r["steps"], r["llm_calls"], r["tool_calls"]) for r in runs] == [
        ("unnumbered", TURNS, TURNS, TURNS),
        ("helper", TURNS, TURNS, TURNS),
    ]
    assert _same(analytics.list_runs(clickhouse)) == _same(runs)
    for run in runs:
        expected = analytics.trace_detail(duck, run["trace_id"])["steps"]
        assert [s["llm_calls"] for s in expected] == [1] * TURNS
        assert _same(analytics.trace_detail(clickhouse, run["trace_id"])["steps"]) == _same(expected)
    steps = "SELECT SpanId, step FROM spans WHERE span_type IN ('llm', 'tool') ORDER BY SpanId"
    assert clickhouse.execute(steps).fetchall() == duck.execute(steps).fetchall()
    now = datetime(2026, 1, 1)
    judged = dict(min_samples=1, min_gap_ms=1, stuck_after_seconds=60, now=now)
    assert sorted(map(repr, _same(analytics.stalls(clickhouse, **judged)))) == sorted(
        map(repr, _same(analytics.stalls(duck, **judged)))
    )


def test_a_model_call_inside_a_tool_is_numbered_the_same_on_both_stores(
    both_stores: Callable[..., tuple[Any, Any]],
) -> None:
    duck, clickhouse = both_stores(spans_to_request(model_in_tool_spans()))
    runs = analytics.list_runs(duck)
    assert [(r["steps"], r["llm_calls"]) for r in runs] == [(2, 3)]
    assert _same(analytics.list_runs(clickhouse)) == _same(runs)
    steps = "SELECT SpanId, step FROM spans WHERE span_type IN ('llm', 'tool') ORDER BY SpanId"
    assert clickhouse.execute(steps).fetchall() == duck.execute(steps).fetchall()
