"""Cached tokens and cost as twelve real framework instrumentations record them (issue 22).

The recordings (``tests/frameworks/recordings``, ``docs/frameworks.md``) were made against a
scripted OpenAI-compatible server that answers as ``gpt-4o-mini-2024-07-18`` with known usage:
``prompt_tokens_details.cached_tokens = 64·turn``. Replayed into a real store, each scenario's runs
must hold the cached tokens the server returned, and cost what OpenAI bills for that usage —
except where an instrumentation does not record the cached count (then the cached tokens are
billed as plain input: loopsight prices what the span says).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopsight import analytics
from loopsight.stores import ingest_request
from loopsight.stores.duckdb_store import Store

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from recorder.matrix import load_requests, scenario_dirs, trace_ids  # noqa: E402

DIRS = scenario_dirs()
NO_CACHE_COUNT = {"openai_agents", "smolagents"}  # their spans carry no cached-token attribute
GPT4O_MINI = (0.15, 0.075, 0.60)  # USD per million: input, cached input, output (openai.com/api/pricing)


def _by_hand(expected: dict, cached_reported: bool) -> tuple[int, float]:
    cached, cost = 0, 0.0
    inp_price, cached_price, out_price = GPT4O_MINI
    for invocation in expected["invocations"]:
        for turn in invocation["model_turns"]:
            if not turn["usage_returned"]:
                continue
            prompt, completion = turn["usage"]
            hit = 64 * turn["turn"] if cached_reported else 0  # what the server returned (recorder/model_server.py)
            cached += hit
            cost += ((prompt - hit) * inp_price + hit * cached_price + completion * out_price) / 1e6
    return cached, cost


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One store holding every recording (each scenario's traces are its own)."""
    store = Store.open(str(tmp_path_factory.mktemp("frameworks") / "replay.duckdb"))
    for directory in DIRS:
        for request in load_requests(directory):
            ingest_request(store, request)
    reader = store.reader()
    yield reader
    reader.close()
    store.close()


@pytest.mark.parametrize("directory", DIRS, ids=[f"{d.parent.name}/{d.name}" for d in DIRS])
def test_recorded_cache_hits_and_cost(directory: Path, replayed: Any) -> None:
    expected = json.loads((directory / "expected.json").read_text())
    cached_reported = directory.parent.name not in NO_CACHE_COUNT
    cached, cost = _by_hand(expected, cached_reported)
    if cached_reported:
        assert cached == sum(inv.get("cache_read_input_tokens") or 0 for inv in expected["invocations"])
    runs = [
        run
        for trace in trace_ids(load_requests(directory))
        for run in analytics.list_runs(replayed, trace_id=trace, limit=1000)
    ]
    assert sum(r["cache_read_input_tokens"] for r in runs) == cached
    assert sum(r["input_tokens"] for r in runs) == sum(inv["input_tokens"] for inv in expected["invocations"])
    assert sum(r["unpriced_calls"] for r in runs) == 0
    assert sum(r["cost_usd"] or 0 for r in runs) == pytest.approx(cost, abs=1e-9)


def test_every_recorded_model_is_priced_as_openai_gpt_4o_mini(replayed: Any) -> None:
    models = analytics.models(replayed)
    assert {m["priced_as"] for m in models} == {"openai/gpt-4o-mini"}
    # as the instrumentations name it: the request model, the response model, LiteLLM's vendor/model
    assert {m["model"] for m in models} >= {"gpt-4o-mini", "openai/gpt-4o-mini"}
