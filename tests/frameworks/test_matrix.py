"""Every recorded framework scenario, replayed through a real collector, must come out as the
driver observed it: one run per agent invocation, named as the user named the agent, steps, tool
calls, failed calls, tokens, status and termination reason exactly, every loop found with its kind
and no false loop. The recordings are made by ``recorder/record.py`` (``make record-frameworks``);
``recorder/matrix.py`` holds the replay and the comparison, and prints the same matrix."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from recorder.matrix import Cell, load_requests, run_matrix, scenario_dirs, table, trace_ids  # noqa: E402

pytestmark = pytest.mark.frameworks
DIRS = scenario_dirs()
RECORDINGS_ROOT = ROOT / "tests" / "frameworks" / "recordings"


@pytest.fixture(scope="module")
def collector(collector_launcher: Callable[..., Any]) -> Iterator[Any]:
    running = collector_launcher()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def matrix(collector: Any) -> dict[str, Cell]:
    cells = run_matrix(collector.url, DIRS, headers=collector.headers)
    print("\n" + table(cells))
    return {f"{c.config}/{c.scenario}": c for c in cells}


def test_recordings_exist() -> None:
    configs = {d.parent.name for d in DIRS}
    assert len(configs) >= 12, sorted(configs)


@pytest.mark.parametrize("case", [f"{d.parent.name}/{d.name}" for d in DIRS])
def test_framework_scenario(matrix: dict[str, Cell], case: str) -> None:
    cell = matrix[case]
    assert cell.ok, f"{case}: " + "; ".join(cell.mismatches)


@pytest.mark.parametrize(
    ("config", "captured", "hint"),
    [
        ("adk", False, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (Google ADK)"),
        ("adk_content", True, None),
    ],
)
def test_a_run_without_tool_arguments_names_the_setting(
    matrix: dict[str, Cell], collector: Any, config: str, captured: bool, hint: str | None
) -> None:
    import httpx

    (trace,) = trace_ids(load_requests(RECORDINGS_ROOT / config / "single"))
    (run,) = httpx.get(f"{collector.url}/api/v1/runs/{trace}", headers=collector.headers, timeout=30).json()["runs"]
    assert run["arguments_captured"] is captured
    assert run.get("arguments_hint") == hint


def test_traces_without_an_agent_span_are_runs_or_nothing_never_stuck(collector_launcher: Callable[..., Any]) -> None:
    """LlamaIndex sends no AGENT span (its CHAIN ``FunctionAgent.run`` is the run); an agent being
    built (OpenLLMetry's ``LangGraph.workflow`` with no model call) and a tool called outside any
    agent are no run. Replayed an hour old, none is stuck."""
    import os
    import time

    import httpx
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    from recorder.matrix import shift_to_now
    from tests.spans import kv, request_of, tool_span

    hour_ago = time.time_ns() - 3600 * 10**9
    requests = load_requests(RECORDINGS_ROOT / "llamaindex" / "single")
    shift_to_now(requests, hour_ago)
    built = Span(
        trace_id=os.urandom(16),
        span_id=os.urandom(8),
        name="LangGraph.workflow",
        start_time_unix_nano=hour_ago - 10**6,
        end_time_unix_nano=hour_ago,
        attributes=[kv("traceloop.span.kind", "workflow"), kv("traceloop.entity.name", "LangGraph")],
    )
    requests += [request_of([built]), request_of([tool_span(os.urandom(16), os.urandom(8), hour_ago)])]
    running = collector_launcher()
    try:
        for request in requests:
            httpx.post(
                f"{running.url}/v1/traces",
                content=request.SerializeToString(),
                headers={"Content-Type": "application/x-protobuf", **running.headers},
                timeout=30,
            ).raise_for_status()
        deadline = time.monotonic() + 30
        runs: list[dict[str, Any]] = []
        while time.monotonic() < deadline and not runs:
            runs = httpx.get(f"{running.url}/api/v1/runs", headers=running.headers, timeout=30).json()["runs"]
            time.sleep(0.3)
        time.sleep(1.0)  # the later traces settle too
        runs = httpx.get(f"{running.url}/api/v1/runs", headers=running.headers, timeout=30).json()["runs"]
        assert [(r["agent"], r["steps"]) for r in runs] == [("support_agent", 2)]
        stuck = httpx.get(
            f"{running.url}/api/v1/stalls", params={"kind": "stuck", "stuck_after": 60}, headers=running.headers
        ).json()["stalls"]
        assert stuck == []
    finally:
        running.stop()
