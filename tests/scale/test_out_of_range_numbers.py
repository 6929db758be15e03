"""Token counts, steps and attempts outside their ranges read as missing on both stores.

A legal int64 of 5e18 tokens on two model calls once overflowed the per-run sums: every
derive pass after it failed, so no later run was listed (and the failure survived restarts).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span
from spans import kv, make_run, request_of

from loopsight import analytics

from .test_parity import _same

HUGE = 5 * 10**18  # inside int64: sums of two overflow BIGINT


def _absurd_run(start_ns: int) -> list[Span]:
    spans = make_run(tools=1, start_ns=start_ns, agent="absurd")
    chat = spans[0]
    root = spans[-1]
    attributes = [a for a in chat.attributes if not a.key.startswith("gen_ai.usage")]
    del chat.attributes[:]
    chat.attributes.extend(
        [*attributes, kv("gen_ai.usage.input_tokens", HUGE), kv("gen_ai.usage.output_tokens", 2**32)]
    )
    again = Span()
    again.CopyFrom(chat)
    again.span_id = os.urandom(8)
    del again.attributes[:]
    again.attributes.extend(
        [
            *attributes[:-1],
            kv("gen_ai.usage.input_tokens", HUGE),
            kv("gen_ai.usage.output_tokens", 2**32 - 1),
            kv("loopsight.step", 2**40),
        ]
    )
    return [chat, again, *spans[1:-1], root]


def test_absurd_numbers_read_as_missing_and_later_runs_are_listed(both_stores: Callable[..., tuple[Any, Any]]) -> None:
    t0 = 1_764_000_000 * 10**9
    duck, clickhouse = both_stores(
        request_of(_absurd_run(t0)), request_of(make_run(tools=1, start_ns=t0 + 60 * 10**9, agent="later"))
    )
    runs = analytics.list_runs(duck)
    assert [(r["agent"], r["input_tokens"], r["output_tokens"], r["llm_calls"]) for r in runs] == [
        ("later", 100, 10, 1),
        ("absurd", 0, 2**32 - 1, 2),
    ]
    assert duck.execute("SELECT count(*) FROM derive_pending").fetchone()[0] == 0
    assert duck.execute("SELECT count(*) FROM spans WHERE step > 2**31").fetchone()[0] == 0
    assert [r["agent"] for r in analytics.top_runs_by_tokens(duck)] == ["absurd", "later"]
    assert _same(analytics.list_runs(clickhouse)) == _same(runs)
    assert _same(analytics.top_runs_by_tokens(clickhouse)) == _same(analytics.top_runs_by_tokens(duck))
