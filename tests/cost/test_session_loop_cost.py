"""A loop across a session's runs: its wasted cost prices the very calls its wasted tokens count,
on DuckDB and on ClickHouse (chdb).

Session ``S``: run A calls ``fetch(x)`` twice, run B (a second later) once more: an exact loop whose
calls span two runs, reported on B. Each run has two gpt-4o calls, 100 / 10 and 200 / 10 tokens
around its tool calls. Wasted: the model calls begun after the loop's first call (A's first fetch):
A's second (210), B's two (110 + 210) = 530 tokens, 500 in and 30 out, $0.00155 at gpt-4o's list
price (2.50 / 10.00 per million); B's own calls alone would be $0.00095.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cost_world import MTOK, Trace, World

from loopsight import analytics
from loopsight.ingest.otlp import decode_request
from loopsight.stores import ingest_request, open_writer

WASTED_TOKENS = 210 + 110 + 210
WASTED_COST = (500 * 2.50 + 30 * 10.00) / MTOK
_databases = itertools.count()


def session_world() -> World:
    base = time.time_ns() - 600 * 10**9
    traces = {}
    for name, offset, fetches in (("a", 0, 2), ("b", 10**9, 1)):
        t = traces[name] = Trace(base + offset)
        run = os.urandom(8).hex()
        t.chat(run, 0, "openai", "gpt-4o", (100, 0, 0, 10))
        t.tool(run, 0, "fetch", '{"url": "https://example.com/x"}')
        t.chat(run, 1, "openai", "gpt-4o", (200, 0, 0, 10))
        if fetches == 2:
            t.tool(run, 1, "fetch", '{"url": "https://example.com/x"}')
        t.run_span(run, "session-agent", "completed", session="S")
    return World(traces, base)


@pytest.fixture(params=["duckdb", "chdb"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "duckdb":
        url = f"duckdb://{tmp_path / 'c.duckdb'}"
    else:
        pytest.importorskip("chdb")
        from loopsight.stores.clickhouse import chdb_open_path

        url = f"chdb://{chdb_open_path() or tmp_path_factory.mktemp('chdb')}?database=session_cost{next(_databases)}"
    return url


def _loaded(url: str, world: World) -> Iterator[tuple[Any, World]]:
    store = open_writer(url)
    try:
        ingest_request(store, decode_request(world.body(), "application/json", None, 10**9))
        if hasattr(store, "drain"):
            store.drain(60)
        yield store.reader(), world
    finally:
        store.close()


@pytest.fixture
def reader(store_url: str) -> Iterator[tuple[Any, World]]:
    yield from _loaded(store_url, session_world())


@pytest.fixture
def overlapping(store_url: str) -> Iterator[tuple[Any, World]]:
    yield from _loaded(store_url, overlapping_world())


def test_a_session_loop_costs_what_its_wasted_tokens_are(reader: tuple[Any, World]) -> None:
    con, world = reader
    [loop] = analytics.loops(con)
    assert (loop["scope"], loop["trace_id"], loop["wasted_tokens"]) == ("session", world.trace_id("b"), WASTED_TOKENS)
    assert loop["wasted_cost_usd"] == pytest.approx(WASTED_COST, abs=1e-9)
    page = analytics.loops_page(con)
    assert (page["wasted_tokens"], page["wasted_cost_usd"]) == (WASTED_TOKENS, pytest.approx(WASTED_COST, abs=1e-9))
    burn = {r["trace_id"]: r for r in analytics.burn_runs(con)}
    assert burn[world.trace_id("b")]["wasted_tokens"] == WASTED_TOKENS
    assert burn[world.trace_id("b")]["wasted_cost_usd"] == pytest.approx(WASTED_COST, abs=1e-9)
    assert burn[world.trace_id("a")]["wasted_cost_usd"] == 0


def overlapping_world() -> World:
    """Run A: a chat (100 / 10), fetch(x), search(q) three times (A's own exact loop), a chat (200 / 10),
    fetch(x); run B: a chat (100 / 10), fetch(x) (the session's loop on fetch(x)), a chat (200 / 10)."""
    base = time.time_ns() - 600 * 10**9
    traces = {}
    for name, offset in (("a", 0), ("b", 10**9)):
        t = traces[name] = Trace(base + offset)
        run = os.urandom(8).hex()
        t.chat(run, 0, "openai", "gpt-4o", (100, 0, 0, 10))
        t.tool(run, 0, "fetch", '{"url": "https://example.com/x"}')
        if name == "a":
            for _ in range(3):
                t.tool(run, 0, "search", '{"q": "refund policy"}')
        t.chat(run, 1, "openai", "gpt-4o", (200, 0, 0, 10))
        if name == "a":
            t.tool(run, 1, "fetch", '{"url": "https://example.com/x"}')
        t.run_span(run, "session-agent", "completed", session="S")
    return World(traces, base)


def test_a_call_wasted_by_a_runs_own_loop_and_its_sessions_loop_is_counted_once(overlapping: tuple[Any, World]) -> None:
    """The Loops page's total summed each looping run's largest waste: A's second chat (210 tokens),
    wasted by A's own loop and by the session's loop listed on B, was counted twice (740, not 530)."""
    con, _ = overlapping
    by_scope = {loop["scope"]: loop for loop in analytics.loops(con)}
    assert (by_scope["run"]["wasted_tokens"], by_scope["session"]["wasted_tokens"]) == (210, 530)
    page = analytics.loops_page(con)
    assert (page["looping_runs"], page["wasted_tokens"]) == (2, 530)
    assert page["wasted_cost_usd"] == pytest.approx((500 * 2.50 + 30 * 10.00) / MTOK, abs=1e-9)


def test_a_session_has_its_price_beside_its_tokens(reader: tuple[Any, World]) -> None:
    """``/api/v1/sessions`` and the Sessions page listed a session's tokens without their cost
    (docs/cost.md: every token figure has its price beside it): the sum of its runs' costs."""
    con, _ = reader
    (session,) = analytics.sessions(con)
    run_cost = (300 * 2.50 + 20 * 10.00) / MTOK  # each run: 100 / 10 and 200 / 10 tokens of gpt-4o
    assert (session["session_id"], session["input_tokens"], session["output_tokens"]) == ("S", 600, 40)
    assert session["cost_usd"] == pytest.approx(2 * run_cost, abs=1e-9) and session["unpriced_calls"] == 0
    assert analytics.sessions(con, session="S") == [session], "one session asked for by its id, on both engines"
    assert analytics.sessions(con, session="T") == []


def test_a_runs_loops_have_their_wasted_cost_beside_their_wasted_tokens(overlapping: tuple[Any, World]) -> None:
    """The loops of ``/api/v1/runs/{trace_id}`` (the Run page) gave wasted tokens without their cost,
    which ``/api/v1/loops`` lists beside them: the same figure, a session's loop pricing its other runs' calls."""
    con, world = overlapping
    listed = {(x["trace_id"], x["run_id"], x["kind"], x["scope"]): x["wasted_cost_usd"] for x in analytics.loops(con)}
    seen = 0
    for name in ("a", "b"):
        trace = world.trace_id(name)
        for loop in analytics.trace_detail(con, trace)["loops"]:
            assert loop["wasted_cost_usd"] == listed[(trace, loop["run_id"], loop["kind"], loop["scope"])]
            seen += 1
    assert seen == len(listed) == 2
    (session_loop,) = [x for x in analytics.trace_detail(con, world.trace_id("b"))["loops"] if x["scope"] == "session"]
    assert session_loop["wasted_cost_usd"] == pytest.approx((500 * 2.50 + 30 * 10.00) / MTOK, abs=1e-9)
