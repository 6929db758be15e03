"""Tool stats: calls, failures by class, retries, latency percentiles, per agent."""

from __future__ import annotations

import duckdb
import pytest
from analytics_fixture import quantile
from analytics_world import CURRENT, PREVIOUS

from loopsight.analytics import tool_stats


def test_tools_in_the_current_window(con: duckdb.DuckDBPyConnection) -> None:
    assert tool_stats(con, **CURRENT) == [
        {
            "tool": "search",
            "calls": 5,
            "errors": 0,
            "fail_rate": 0.0,
            "errors_by_class": {},
            "retries": 0,
            "p50_ms": 60.0,
            "p95_ms": pytest.approx(quantile([20, 40, 60, 80, 100], 0.95)),
            "turns_after_failures": 0,
            "tokens_after_failures": 0,
            "cost_after_failures_usd": 0.0,
        },
        {
            "tool": "refund",
            "calls": 3,
            "errors": 2,
            "fail_rate": 2 / 3,
            "errors_by_class": {"permanent": 1, "transient": 1},
            "retries": 1,
            "p50_ms": 30.0,
            "p95_ms": pytest.approx(quantile([10, 30, 70], 0.95)),
            # both failures were the runs' last steps: no model turn read them
            "turns_after_failures": 0,
            "tokens_after_failures": 0,
            "cost_after_failures_usd": 0.0,
        },
        {
            "tool": "lookup",
            "calls": 1,
            "errors": 1,
            "fail_rate": 1.0,
            "errors_by_class": {"transient": 1},
            "retries": 2,
            "p50_ms": 50.0,
            "p95_ms": 50.0,
            # R1's step 2 (300 + 30 tokens) read the failure; its model is unnamed: unpriced
            "turns_after_failures": 1,
            "tokens_after_failures": 330,
            "cost_after_failures_usd": None,
        },
    ]


def test_per_agent_filter_and_grouping(con: duckdb.DuckDBPyConnection) -> None:
    assert [row["tool"] for row in tool_stats(con, agent="billing", **CURRENT)] == ["refund"]
    # The sub-agent's search call (R1 step 2) counts for the run's agent, orders.
    grouped = tool_stats(con, by_agent=True)
    assert [(r["tool"], r["agent"], r["calls"], r["errors"]) for r in grouped] == [
        ("search", "orders", 7, 0),
        ("refund", "billing", 4, 3),
        ("lookup", "orders", 1, 1),
    ]
    assert tool_stats(con, agent="helper") == []


def test_previous_window_and_filters(con: duckdb.DuckDBPyConnection) -> None:
    assert [(r["tool"], r["calls"], r["errors_by_class"]) for r in tool_stats(con, **PREVIOUS)] == [
        ("refund", 1, {"transient": 1}),
        ("search", 1, {}),
    ]
    assert [r["tool"] for r in tool_stats(con, service="svc-a", tool="search", **PREVIOUS)] == ["search"]
    assert tool_stats(con, tool="x' OR '1'='1") == []
