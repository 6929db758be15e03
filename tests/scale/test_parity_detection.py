"""Loops, stalls and burn give the same answers on DuckDB and on ClickHouse (chdb).

Same stores as test_parity.py: DuckDB filled by loopsight's ingest, ClickHouse as the
contrib exporter fills ``otel_traces``, from the same OTel SDK spans.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from loopsight.analytics import budget_replay, budgets, burn, loop_counts, loops, loops_page, stall_counts, stalls
from loopsight.analytics.burn import burn_curve
from loopsight.analytics.loops import loop_rate, loop_run_ids, loops_over_time, top_looping_args, top_looping_tools
from loopsight.analytics.stalls import time_to_first_tool

from .test_parity import _same

WINDOW = {"since": datetime(2025, 3, 1, 9, 0), "until": datetime(2025, 3, 1, 10, 0)}
FILTERS = [{}, {"agent": "researcher"}, WINDOW]
IDS = ["all", "agent", "window"]
MORE_FILTERS = [{"service": "gateway"}, {"agent": "nobody"}]
NOW = datetime(2025, 3, 1, 12, 0)

QUESTIONS: dict[str, Callable[..., Any]] = {
    "loops": lambda con, **f: loops(con, **f),
    "loop_rate": lambda con, **f: loop_rate(con, **f),
    "loop_run_ids": lambda con, **f: sorted(map(list, loop_run_ids(con, **f).items())),
    "loops_over_time": lambda con, **f: loops_over_time(con, bucket_seconds=1800, **f),
    "top_looping_tools": lambda con, **f: top_looping_tools(con, **f),
    "top_looping_args": lambda con, **f: top_looping_args(con, **f),
    "stalls": lambda con, **f: stalls(con, now=NOW, **f),
    "stall_counts": lambda con, **f: stall_counts(con, now=NOW, min_samples=2, min_gap_ms=500, **f),
    "loop_counts": lambda con, **f: loop_counts(con, **f),
    "loops_page": lambda con, **f: loops_page(con, **f),
    "stalls_judged": lambda con, **f: stalls(con, now=NOW, min_samples=2, min_gap_ms=500, stuck_after_seconds=60, **f),
    "time_to_first_tool": lambda con, **f: time_to_first_tool(con, **f),
    "burn": lambda con, **f: burn(con, **f),
    "burn_curve": lambda con, **f: burn_curve(con, **f),
    "budgets": lambda con, **f: budgets(con, **f),
    "budgets_by_service": lambda con, **f: budgets(con, by_service=True, **f),
    "budget_replay": lambda con, **f: [
        budget_replay(con, kind=k, value=v, only_cut=False, limit=1000, **f)
        for k, v in (("steps", 2), ("tool_calls", 1), ("seconds", 0.5), ("tokens", 300))
    ],
}


@pytest.mark.parametrize("question", list(QUESTIONS))
@pytest.mark.parametrize("filters", FILTERS, ids=IDS)
def test_detection_questions_are_the_same(duck: Any, clickhouse: Any, question: str, filters: dict[str, Any]) -> None:
    ask = QUESTIONS[question]
    expected, got = _same(ask(duck, **filters)), _same(ask(clickhouse, **filters))
    if question.startswith("stalls"):
        # Equal-ranked stalls (two gaps of one run, same length) have no defined order on either engine.
        assert [s["kind"] for s in got] == [s["kind"] for s in expected]
        expected, got = sorted(expected, key=repr), sorted(got, key=repr)
    assert got == expected


@pytest.mark.parametrize("filters", MORE_FILTERS, ids=["service", "no_agent"])
def test_filtered_detection_is_the_same(duck: Any, clickhouse: Any, filters: dict[str, Any]) -> None:
    for question in ("loops", "stalls_judged", "burn"):
        test_detection_questions_are_the_same(duck, clickhouse, question, filters)


def test_one_sessions_loops_are_the_same(duck: Any, clickhouse: Any) -> None:
    expected = _same(loops_page(duck, session="sess-fixture"))
    assert expected["total"] >= 1 and {x["session_id"] for x in expected["loops"]} == {"sess-fixture"}
    assert _same(loops_page(clickhouse, session="sess-fixture")) == expected
    for con in (duck, clickhouse):  # no loop wasted nothing: 0, not null (docs/api.md)
        nobody = loops_page(con, session="nobody")
        assert (nobody["total"], nobody["wasted_tokens"], nobody["wasted_cost_usd"]) == (0, 0, 0.0)


def test_kind_limit_and_step_options_are_the_same(duck: Any, clickhouse: Any) -> None:
    assert _same(loops(clickhouse, kind="exact", limit=2)) == _same(loops(duck, kind="exact", limit=2))
    assert stalls(clickhouse, now=NOW, kind="backoff") == stalls(duck, now=NOW, kind="backoff")
    assert _same(burn_curve(clickhouse, max_step=1)) == _same(burn_curve(duck, max_step=1))


def test_the_fixture_exercises_what_is_compared(duck: Any) -> None:
    """So parity is not parity of empty answers."""
    assert {r["kind"] for r in loops(duck)} >= {"exact", "no_progress"}
    assert {(r["kind"], r["scope"], r["session_id"]) for r in loops(duck, agent="concierge")} == {
        ("oscillation", "session", "sess-fixture")
    }
    # found by the argument features alone (the rephraser's spans carry raw arguments, no guard record)
    assert {(r["tool"], r["kind"], r["count"]) for r in loops(duck, agent="rephraser")} == {
        ("web_search", "semantic", 3)
    }
    assert {s["kind"] for s in stalls(duck, now=NOW, min_samples=2, min_gap_ms=500, stuck_after_seconds=60)} >= {
        "stuck",
        "idle_gap",
        "backoff",
    }
    agents = burn(duck)["agents"]
    assert any(a["growth_exponent"] is not None for a in agents) and burn(duck)["runs"]
    assert time_to_first_tool(duck) and burn_curve(duck)


def test_quantiles_are_the_same_to_the_last_digit(duck: Any, clickhouse: Any) -> None:
    # Each engine interpolates in its own float order (46.0 / 45.99999999999999): the answers round
    # them, so the JSON of both engines is the same byte for byte.
    from loopsight.analytics import tool_stats

    for ask in (
        burn_curve,
        tool_stats,
        lambda con: [[b["distribution"] for b in a["budgets"]] for a in budgets(con)["agents"]],
    ):
        expected = ask(duck)
        assert json.dumps(ask(clickhouse), sort_keys=True) == json.dumps(expected, sort_keys=True)


def test_a_stuck_runs_last_span_is_the_same_when_spans_end_together(
    both_stores: Callable[..., tuple[Any, Any]],
) -> None:
    """Parallel tool calls ending in the same microsecond: each engine's arg_max took any of them,
    so a stuck run named another tool and span on ClickHouse (3 of 4 traces here)."""
    from spans import make_run, request_of, tool_span

    start = int(NOW.replace(tzinfo=UTC).timestamp() * 1e9) - 600 * 10**9  # ten minutes before NOW
    requests = []
    for trace in range(4):
        trace_id = bytes([trace + 1]) * 16
        spans = make_run(tools=0, start_ns=start, trace_id=trace_id)[:-1]  # its run span not come: in flight
        for n, tool in enumerate(["zeta", "alpha", "mid"]):
            span = tool_span(trace_id, bytes([trace + 1, n + 1]) * 4, start + 2_000_000, {"gen_ai.tool.name": tool})
            span.parent_span_id, span.end_time_unix_nano = spans[0].parent_span_id, start + 5_000_000
            spans.append(span)
        requests.append(request_of(spans))
    duck, clickhouse = both_stores(*requests)
    found = stalls(duck, now=NOW, stuck_after_seconds=60)
    assert [s["tool"] for s in found if s["kind"] == "stuck"] == ["mid"] * 4  # its span id is the greatest
    assert _same(stalls(clickhouse, now=NOW, stuck_after_seconds=60)) == _same(found)
