"""Runs: the list and its filters, top runs by tokens, one trace in detail (see conftest's table)."""

from __future__ import annotations

from datetime import timedelta

import duckdb
import pytest
from analytics_fixture import T0
from analytics_world import CURRENT, World

from loopsight.analytics import list_runs, top_runs_by_tokens, trace_detail

NEWEST_FIRST = ["O1", "R5", "R4", "R3", "R2", "R1", "P2", "P1"]


def names(world: World, runs: list[dict]) -> list[str]:
    by_id = {info.run_id: name for name, info in world.runs.items()}
    return [by_id[run["run_id"]] for run in runs]


def test_every_run_newest_first_with_its_rollups(world: World, con: duckdb.DuckDBPyConnection) -> None:
    runs = list_runs(con)
    assert names(world, runs) == NEWEST_FIRST
    r1 = runs[NEWEST_FIRST.index("R1")]
    info = world.runs["R1"]
    assert r1 == {
        "trace_id": info.trace_id,
        "run_id": info.run_id,
        "agent": "orders",
        "service": "svc-a",
        "started_at": "2026-01-11T01:00:00.000000Z",
        "duration_ms": info.duration_ms,
        "status": "ok",
        "termination_reason": "completed",
        "steps": 4,
        "llm_calls": 4,
        "tool_calls": 3,
        "tool_errors": 1,
        "retries": 2,
        "input_tokens": 1000,
        "output_tokens": 100,
        "loops": 0,
        "session_id": None,
        "arguments_captured": True,
        "cache_read_input_tokens": 0,
        "cache_write_input_tokens": 0,
        "cost_usd": None,  # its model calls name no model: unpriced, never $0
        "unpriced_calls": 4,
    }
    assert runs[NEWEST_FIRST.index("R2")]["loops"] == 1


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"tool": "search"}, ["O1", "R2", "R1", "P1"]),
        ({"tool": "search", **CURRENT}, ["R2", "R1"]),
        ({"tool": "lookup"}, ["R1"]),
        ({"tool": "nope"}, []),
        ({"min_tokens": 1100}, ["O1", "R5", "R1"]),
        ({"min_tokens": 1101}, ["O1", "R5"]),
        ({"agent": "orders", "tool": "search", "min_tokens": 496}, ["O1", "R1"]),
        ({"status": "ok"}, ["O1", "R5", "R4", "R2", "R1", "P1"]),
        ({"status": "error"}, ["R3", "P2"]),
        ({"termination_reason": "loop_detected"}, ["R2"]),
        ({"agent": "billing"}, ["R4", "R3", "P2"]),
        ({"service": "svc-b", "since": T0 + timedelta(hours=27)}, ["R4", "R3"]),
        ({"until": T0 + timedelta(hours=27)}, ["R2", "R1", "P2", "P1"]),
        ({"limit": 2, "offset": 1}, ["R5", "R4"]),
        ({"agent": "orders' OR 1=1 --"}, []),
        ({"tool": "search') OR ('1'='1"}, []),
    ],
)
def test_filters(world: World, con: duckdb.DuckDBPyConnection, filters: dict, expected: list[str]) -> None:
    assert names(world, list_runs(con, **filters)) == expected


def test_completed_run_whose_span_failed_is_an_error(world: World, con: duckdb.DuckDBPyConnection) -> None:
    (r3,) = list_runs(con, trace_id=world.runs["R3"].trace_id)
    assert (r3["termination_reason"], r3["status"]) == ("completed", "error")


def test_top_runs_by_tokens(world: World, con: duckdb.DuckDBPyConnection) -> None:
    top = top_runs_by_tokens(con, limit=3)
    assert [(name, run["tokens"]) for name, run in zip(names(world, top), top, strict=False)] == [
        ("O1", 5500),
        ("R5", 1200),
        ("R1", 1100),
    ]
    assert all(run["tokens"] == run["input_tokens"] + run["output_tokens"] for run in top)
    assert names(world, top_runs_by_tokens(con, limit=10, **CURRENT)) == ["R5", "R1", "R3", "R2", "R4"]
    assert names(world, top_runs_by_tokens(con, agent="billing")) == ["R3", "P2", "R4"]
    assert top_runs_by_tokens(con, limit=0) == []


SPAN_KEYS = {
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "kind",
    "start",
    "duration_ms",
    "status",
    "tool",
    "args_hash",
    "error_type",
    "error_class",
    "input_tokens",
    "output_tokens",
    "step",
    "attributes",
    "events",
    "cost_usd",
    "cache_read_input_tokens",
    "cache_write_input_tokens",
}


def test_trace_detail_spans_in_the_design_shape(world: World, con: duckdb.DuckDBPyConnection) -> None:
    info = world.runs["R1"]
    detail = trace_detail(con, info.trace_id)
    assert [run["run_id"] for run in detail["runs"]] == [info.run_id]
    spans = detail["spans"]
    assert all(set(span) == SPAN_KEYS for span in spans)
    assert sorted(span["kind"] for span in spans) == ["agent"] * 2 + ["llm"] * 4 + ["tool"] * 3
    root = spans[0]
    assert (root["span_id"], root["parent_span_id"], root["kind"], root["status"]) == (
        info.run_id,
        None,
        "agent",
        "unset",
    )
    assert root["start"] == "2026-01-11T01:00:00.000000Z"
    assert all(isinstance(k, str) and isinstance(v, str) for span in spans for k, v in span["attributes"].items())
    lookup = next(span for span in spans if span["tool"] == "lookup")
    assert (lookup["status"], lookup["error_type"], lookup["error_class"], lookup["step"]) == (
        "error",
        "timeout",
        "transient",
        1,
    )
    assert lookup["attributes"]["loopsight.tool.attempts"] == "3"
    assert [(e["name"], e["attributes"]["loopsight.backoff_ms"]) for e in lookup["events"]] == [
        ("retry", "100"),
        ("retry", "200"),
    ]
    assert lookup["events"][0]["time"].endswith("Z")
    helper = next(span for span in spans if span["name"] == "invoke_agent helper")
    under_helper = [span for span in spans if span["parent_span_id"] == helper["span_id"]]
    assert sorted(span["kind"] for span in under_helper) == ["llm", "tool"]
    assert {span["status"] for span in spans} == {"unset", "error"}


def test_trace_detail_steps(world: World, con: duckdb.DuckDBPyConnection) -> None:
    steps = trace_detail(con, world.runs["R1"].trace_id)["steps"]
    assert [(s["step"], s["llm_calls"], s["tool_calls"], s["input_tokens"], s["output_tokens"]) for s in steps] == [
        (0, 1, 1, 100, 10),
        (1, 1, 1, 200, 20),
        (2, 1, 1, 300, 30),
        (3, 1, 0, 400, 40),
    ]
    assert [(s["tool_errors"], s["retries"], s["retry_events"]) for s in steps] == [
        (0, 0, 0),
        (1, 2, 2),
        (0, 0, 0),
        (0, 0, 0),
    ]
    assert [s["duration_ms"] for s in steps] == [25.0, 55.0, 45.0, 5.0]
    assert {s["run_id"] for s in steps} == {world.runs["R1"].run_id}

    looped = trace_detail(con, world.runs["R2"].trace_id)
    assert [s["loop_hits"] for s in looped["steps"]] == [0, 0, 1]
    marked = [span for span in looped["spans"] if span["events"]]
    assert [
        (span["step"], [e["name"] for e in span["events"]], span["attributes"]["loopsight.loop.kind"])
        for span in marked
    ] == [(2, ["loop_detected"], "exact")]


def test_unknown_trace_is_empty(con: duckdb.DuckDBPyConnection) -> None:
    assert trace_detail(con, "0" * 32) == {"runs": [], "spans": [], "steps": [], "loops": [], "stuck": False}
