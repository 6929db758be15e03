"""A loop found in another producer's run counts the same everywhere: the Loops list, the run's
``loops``, the overview's loop rate and the ``loop_rate`` alert metric, on both stores.

The run list and the overview counted only the loop guard's own marks, so an OpenInference run
calling the same search three times showed one loop on the Loops page beside "loops 0" and a
loop rate of 0 %.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span
from spans import kv, request_of

from loopsight import analytics
from loopsight.alerts.rules import MetricSpec
from loopsight.analytics.metrics import measure

from .test_parity import _same

T0 = datetime(2026, 3, 1, 12, 0)
NS = int((T0 - datetime(1970, 1, 1)).total_seconds()) * 10**9


def _openinference_run(agent: str, queries: list[str], offset_s: int) -> list[Span]:
    trace, root = os.urandom(16), os.urandom(8)
    t0 = NS + offset_s * 10**9
    tools = [
        Span(
            trace_id=trace,
            span_id=os.urandom(8),
            parent_span_id=root,
            name="search",
            start_time_unix_nano=t0 + (i + 1) * 10**9,
            end_time_unix_nano=t0 + (i + 1) * 10**9 + 10**8,
            attributes=[
                kv("openinference.span.kind", "TOOL"),
                kv("tool.name", "search"),
                kv("input.value", f'{{"q": "{q}"}}'),
            ],
        )
        for i, q in enumerate(queries)
    ]
    run = Span(
        trace_id=trace,
        span_id=root,
        name=agent,
        start_time_unix_nano=t0,
        end_time_unix_nano=t0 + 10 * 10**9,
        attributes=[kv("openinference.span.kind", "AGENT"), kv("agent.name", agent)],
    )
    return [*tools, run]


def _answers(con: Any) -> dict[str, Any]:
    window = {"since": T0 - timedelta(minutes=5), "until": T0 + timedelta(minutes=5)}
    return {
        "loops": [(x["run_id"] is not None, x["kind"], x["count"]) for x in analytics.loops(con)],
        "runs": sorted((r["agent"], r["loops"]) for r in analytics.list_runs(con)),
        "overview": analytics.overview(con, **window)["tiles"]["loop_rate"]["value"],
        "alert": measure(con, MetricSpec("loop_rate"), window["since"], window["until"]).value,
    }


def test_loop_counts_agree_on_both_stores(both_stores: Callable[..., tuple[Any, Any]]) -> None:
    duck, clickhouse = both_stores(
        request_of(
            _openinference_run("oi-looper", ["weather paris"] * 3, 0)
            + _openinference_run("oi-fine", ["a", "b", "c"], 30),
            service="oi",
        )
    )
    expected = {
        "loops": [(True, "exact", 3)],
        "runs": [("oi-fine", 0), ("oi-looper", 1)],
        "overview": 0.5,
        "alert": 0.5,
    }
    assert _answers(duck) == expected
    assert _same(_answers(clickhouse)) == expected
