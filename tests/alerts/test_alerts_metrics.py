"""Each alert metric over a real store: value, sample size, examples, filters; and the gauges."""

from __future__ import annotations

from datetime import timedelta

import pytest
from alerts_traffic import T0, Call, Traffic

from loopsight.alerts import AgentGauges, MetricSpec, gauges, measure, prometheus_lines
from loopsight.analytics import tool_stats
from loopsight.analytics.loops import loop_rate
from loopsight.analytics.stalls import MIN_SAMPLES
from loopsight.stores.duckdb_store import Store

SINCE, UNTIL = T0 - timedelta(minutes=5), T0


@pytest.fixture
def traces(store: Store, traffic: Traffic) -> dict[str, list[str]]:
    """In [T0-5m, T0): 4 clean runs (svc/support), 2 looping runs (3x the same fetch), 2 runs with a
    failing fetch (transient), 1 'garbage' search that succeeded, 1 run of another agent/service that
    ended max_steps; one run before the window and one unfinished run (stuck) that stopped at T0-4m."""
    at = lambda s: T0 - timedelta(minutes=5) + timedelta(seconds=s)  # noqa: E731
    ids: dict[str, list[str]] = {"clean": [], "loop": [], "fail": [], "garbage": [], "other": [], "stuck": []}
    for i in range(4):
        ids["clean"].append(
            traffic.run(at(10 + i), [Call("search", f"q{i}"), Call("fetch", f"u{i}")], tokens=(100, 10))
        )
    for i in range(2):
        ids["loop"].append(
            traffic.run(at(30 + i), [Call("fetch", "same")] * 3, termination="loop_detected", tokens=(1000, 100))
        )
    for i in range(2):
        ids["fail"].append(
            traffic.run(at(50 + i), [Call("fetch", f"x{i}", error_type="timeout", error_class="transient")])
        )
    ids["garbage"].append(traffic.run(at(70), [Call("search", "g", error_class="garbage")]))
    ids["other"].append(
        traffic.run(at(80), [Call("search", "o")], agent="billing", service="svc-b", termination="max_steps")
    )
    traffic.run(T0 - timedelta(minutes=30), [Call("fetch", "old", error_type="timeout", error_class="transient")])
    ids["stuck"].append(traffic.run(at(60), [Call("fetch", "s")], finished=False))
    traffic.flush()
    return ids


def m(store: Store, spec: MetricSpec):
    con = store.reader()
    try:
        return measure(con, spec, SINCE, UNTIL)
    finally:
        con.close()


def test_loop_rate(store: Store, traces: dict[str, list[str]]) -> None:
    result = m(store, MetricSpec("loop_rate"))
    assert (result.value, result.samples) == (2 / 10, 10)
    assert sorted(result.examples) == sorted(traces["loop"])
    assert m(store, MetricSpec("loop_rate", tool="search")).value == 0
    assert m(store, MetricSpec("loop_rate", agent="billing")).samples == 1
    con = store.reader()
    try:
        assert loop_rate(con, since=SINCE, until=UNTIL) == {"runs": 10, "looping_runs": 2, "loop_rate": 0.2}
    finally:
        con.close()


def test_tool_fail_rate_agrees_with_tool_stats(store: Store, traces: dict[str, list[str]]) -> None:
    fetch = m(store, MetricSpec("tool_fail_rate", tool="fetch"))
    # fetch calls in the window: 4 clean + 6 looping + 2 failing + 1 of the stuck run
    assert (fetch.samples, fetch.value) == (13, 2 / 13)
    assert sorted(fetch.examples) == sorted(traces["fail"])
    con = store.reader()
    try:
        stats = {row["tool"]: row for row in tool_stats(con, since=SINCE, until=UNTIL)}
    finally:
        con.close()
    assert stats["fetch"]["calls"] == fetch.samples and stats["fetch"]["fail_rate"] == pytest.approx(fetch.value)
    assert m(store, MetricSpec("tool_fail_rate", tool="fetch", error_class="transient")).value == 2 / 13
    assert m(store, MetricSpec("tool_fail_rate", tool="fetch", error_class="fatal")).value == 0
    assert m(store, MetricSpec("tool_fail_rate", tool="fetch", agent="billing")).samples == 0
    assert m(store, MetricSpec("tool_fail_rate", tool="nope")).value is None


def test_error_class_rate_counts_silent_failures(store: Store, traces: dict[str, list[str]]) -> None:
    garbage = m(store, MetricSpec("error_class_rate", error_class="garbage"))
    # tool + llm calls: 4*(2+2) + 2*(3+3) + 2*2 + 2 + 2 + 2 (stuck run) = 38
    assert (garbage.samples, garbage.examples) == (38, traces["garbage"])
    assert garbage.value == pytest.approx(1 / 38)
    assert m(store, MetricSpec("error_class_rate", error_class="garbage", tool="search")).value == pytest.approx(1 / 6)


def test_termination_and_tokens(store: Store, traces: dict[str, list[str]]) -> None:
    assert m(store, MetricSpec("termination_rate", reason="max_steps")).value == pytest.approx(0.1)
    assert m(store, MetricSpec("termination_rate", reason="max_steps", service="svc")).value == 0
    top = m(store, MetricSpec("tokens_per_run", stat="max"))
    assert (top.value, top.samples) == (3300, 10)
    assert sorted(top.examples[:2]) == sorted(traces["loop"]) and len(top.examples) == 5
    assert m(store, MetricSpec("tokens_per_run", stat="p50")).value == 220


def test_stuck_runs_and_stall_rate(store: Store, traffic: Traffic, traces: dict[str, list[str]]) -> None:
    stuck = m(store, MetricSpec("stuck_runs", stuck_after_seconds=60))
    assert (stuck.value, stuck.examples) == (1, traces["stuck"])
    assert m(store, MetricSpec("stuck_runs", stuck_after_seconds=600)).value == 0
    assert m(store, MetricSpec("stall_rate")).value == 0
    # a slow call is judged against its tool's p95 once there are enough calls (analytics.stalls)
    for i in range(MIN_SAMPLES):
        traffic.run(T0 - timedelta(seconds=150) + timedelta(milliseconds=500 * i), [Call("fetch", f"n{i}")])
    slow = traffic.run(T0 - timedelta(seconds=90), [Call("fetch", "slow", duration_ms=30_000)])
    traffic.flush()
    stalls = m(store, MetricSpec("stall_rate"))
    assert (stalls.value, stalls.examples) == (1 / (11 + MIN_SAMPLES), [slow])
    assert m(store, MetricSpec("stall_rate", tool="search")).value == 0


def test_gauges_and_prometheus_text(store: Store, traces: dict[str, list[str]]) -> None:
    con = store.reader()
    try:
        lines = prometheus_lines(gauges(con, SINCE, UNTIL))
    finally:
        con.close()
    assert "loopsight_loop_rate 0.2" in lines
    assert 'loopsight_tool_fail_rate{tool="fetch"} ' + repr(2 / 13) in lines
    assert 'loopsight_tool_fail_rate{tool="search"} 0' in lines
    assert 'loopsight_termination_rate{reason="max_steps"} 0.1' in lines
    assert 'loopsight_tokens_per_run{quantile="1"} 3300' in lines
    assert lines.count("# TYPE loopsight_tool_fail_rate gauge") == 1


def test_agent_gauges_are_gauges_recomputed_at_most_every_max_age(
    store: Store, traffic: Traffic, traces: dict[str, list[str]]
) -> None:
    """Without rules, /metrics gets the same gauges(), computed on scrape at most every max_age_seconds."""
    ticks = [0.0]
    cached = AgentGauges(store.reader, max_age_seconds=30, clock=lambda: UNTIL, monotonic=lambda: ticks[0])
    con = store.reader()
    try:
        expected = prometheus_lines(gauges(con, SINCE, UNTIL))
    finally:
        con.close()
    assert cached.prometheus_lines() == expected
    assert "loopsight_runs 10" in expected
    traffic.run(T0 - timedelta(minutes=1), [Call("search", "late")])
    traffic.flush()
    ticks[0] = 29.9
    assert cached.prometheus_lines() == expected
    ticks[0] = 30.0
    assert "loopsight_runs 11" in cached.prometheus_lines()
