"""A Langfuse failure is marked by ``langfuse.observation.level=ERROR``, not by the span status:
it counts as a failed tool call (tool stats, the run's tool errors) on both stores."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span
from spans import kv, request_of

from loopsight import analytics
from loopsight.analytics.tools import tool_stats

from .test_parity import _same


def _langfuse_run(t0: int) -> list[Span]:
    trace, root = os.urandom(16), os.urandom(8)
    agent = Span(
        trace_id=trace,
        span_id=root,
        name="planner",
        start_time_unix_nano=t0,
        end_time_unix_nano=t0 + 4 * 10**9,
        attributes=[kv("langfuse.observation.type", "agent")],
    )
    tools = [
        Span(
            trace_id=trace,
            span_id=os.urandom(8),
            parent_span_id=root,
            name="web_fetch",
            start_time_unix_nano=t0 + i * 10**9,
            end_time_unix_nano=t0 + i * 10**9 + 10**8,
            attributes=[
                kv("langfuse.observation.type", "tool"),
                *([kv("langfuse.observation.level", "ERROR")] if i else []),
            ],
        )
        for i in range(2)
    ]
    return [*tools, agent]


def test_a_langfuse_error_level_is_a_failed_call_on_both_stores(both_stores: Callable[..., tuple[Any, Any]]) -> None:
    duck, clickhouse = both_stores(request_of(_langfuse_run(1_764_000_000 * 10**9), service="lf"))
    [stats] = tool_stats(duck)
    assert (stats["tool"], stats["calls"], stats["errors"]) == ("web_fetch", 2, 1)
    [run] = analytics.list_runs(duck)
    assert (run["agent"], run["tool_calls"], run["tool_errors"]) == ("planner", 2, 1)
    assert _same(tool_stats(clickhouse)) == _same(tool_stats(duck))
    assert _same(analytics.list_runs(clickhouse)) == _same(analytics.list_runs(duck))
