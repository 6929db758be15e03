"""Token economics through a real collector (issue 22): prices from the bundled table, a price
file over it, unpriced never $0, cache hits billed as the provider bills them, and a corrected
price file repricing history on restart.

The runs and their costs by hand are in ``cost_world``; the collector gets them over OTLP/HTTP as
any GenAI instrumentation would send them.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from cost_world import (
    CACHED_COST,
    GPT4O_MINI_CALL,
    LOOP_RUN_COST,
    LOOP_WASTED_COST,
    LOOP_WASTED_TOKENS,
    MTOK,
    PRICED_RUN_COST,
    SONNET_LONG_CALL,
    SONNET_SHORT_CALL,
    UNCACHED_COST,
    World,
    build,
)

from loopsight.client import ApiSource

WORLD = build()


def _send(collector: Any, world: World) -> None:
    response = httpx.post(
        collector.traces_url, content=world.body(), headers={"Content-Type": "application/json"}, timeout=30
    )
    assert response.status_code == 200, response.text


def _get(collector: Any, path: str, **params: object) -> dict:
    response = httpx.get(collector.url + path, params=params, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def _run(collector: Any, name: str) -> dict:
    (run,) = _get(collector, f"/api/v1/runs/{WORLD.trace_id(name)}")["runs"]
    return run


@pytest.fixture(scope="module")
def collector(collector_launcher: Callable[..., Any]) -> Iterator[Any]:
    server = collector_launcher()
    _send(server, WORLD)
    yield server
    server.stop()


def test_a_run_priced_by_hand_equals_the_api_to_the_cent(collector: Any) -> None:
    run = _run(collector, "priced")
    assert round(run["cost_usd"], 2) == round(PRICED_RUN_COST, 2) == 0.49
    assert run["cost_usd"] == pytest.approx(PRICED_RUN_COST, abs=1e-6)
    assert run["unpriced_calls"] == 1  # my-finetune: left out of the sum, counted here
    assert run["cache_read_input_tokens"] == 8_192 + 200_000 + 4_000
    assert run["input_tokens"] == 12_000 + 250_000 + 5_000 + 100  # cached tokens are part of the input


def test_each_call_and_step_has_its_cost(collector: Any) -> None:
    detail = _get(collector, f"/api/v1/runs/{WORLD.trace_id('priced')}")
    chats = sorted((s for s in detail["spans"] if s["kind"] == "llm"), key=lambda s: s["step"])
    assert [s["cost_usd"] for s in chats] == pytest.approx(
        [GPT4O_MINI_CALL, SONNET_LONG_CALL, SONNET_SHORT_CALL, None], abs=1e-6
    )
    steps = sorted(detail["steps"], key=lambda s: s["step"])
    assert steps[3]["cost_usd"] is None and steps[1]["cost_usd"] == pytest.approx(SONNET_LONG_CALL)


def test_an_unknown_model_is_unpriced_never_zero(collector: Any) -> None:
    run = _run(collector, "unpriced")
    assert run["cost_usd"] is None
    assert run["unpriced_calls"] == 1
    models = {m["model"]: m for m in _get(collector, "/api/v1/models")["models"]}
    assert models["my-finetune"]["priced"] is False and models["my-finetune"]["cost_usd"] is None
    assert models["my-finetune"]["prices"] == []
    assert models["claude-sonnet-4-5"]["source"].startswith("genai-prices ")
    assert models["claude-sonnet-4-5"]["cost_usd"] == pytest.approx(SONNET_LONG_CALL + SONNET_SHORT_CALL, abs=1e-6)
    tiers = models["claude-sonnet-4-5"]["prices"]
    assert [(t["input_from"], t["input_to"], t["input"], t["output"]) for t in tiers] == [
        (0, 200_001, 3.0, 15.0),
        (200_001, None, 6.0, 22.5),
    ]


def test_cached_tokens_lower_the_cost_as_the_provider_bills_them(collector: Any) -> None:
    uncached, cached = _run(collector, "uncached"), _run(collector, "cached")
    assert uncached["cost_usd"] == pytest.approx(UNCACHED_COST, abs=1e-9)
    assert cached["cost_usd"] == pytest.approx(CACHED_COST, abs=1e-9)
    # each cached token is billed at $1.25 instead of $2.50 per million
    assert uncached["cost_usd"] - cached["cost_usd"] == pytest.approx(16_384 * (2.50 - 1.25) / MTOK, abs=1e-9)
    (agent,) = [a for a in _get(collector, "/api/v1/burn")["agents"] if a["agent"] == "cache-agent"]
    assert agent["cache_hit_ratio"] == round(16_384 / 40_000, 4)
    # what the cache saved is the difference the two runs show (OpenAI: no cache-write premium)
    assert agent["cache_saved_usd"] == pytest.approx(UNCACHED_COST - CACHED_COST, abs=1e-9)


def test_overview_tiles_in_money(collector: Any) -> None:
    runs = _get(collector, "/api/v1/runs", limit=1000)["runs"]
    window = {"since": "2000-01-01T00:00:00Z", "until": "2100-01-01T00:00:00Z"}
    tiles = _get(collector, "/api/v1/overview", **window)["tiles"]
    assert tiles["cost_usd"]["value"] == pytest.approx(sum(r["cost_usd"] or 0 for r in runs), abs=1e-9)
    ok_priced = [r["cost_usd"] for r in runs if r["status"] == "ok" and r["termination_reason"] == "completed"]
    ok_priced = [c for c in ok_priced if c is not None]
    assert tiles["cost_per_success_usd"]["value"] == pytest.approx(sum(ok_priced) / len(ok_priced), abs=1e-9)
    assert tiles["cost_usd"]["previous"] is None  # nothing ran before 2000: unknown, not $0


def test_burn_in_money(collector: Any) -> None:
    body = _get(collector, "/api/v1/burn")
    agents = {a["agent"]: a for a in body["agents"]}
    pricing = agents["pricing-agent"]
    assert pricing["cost_per_success_usd"] == pytest.approx(PRICED_RUN_COST, abs=1e-6)
    assert pricing["cost_on_failures_usd"] is None  # the failed run's only model is unpriced: not $0
    assert pricing["unpriced_calls"] == 2
    assert pricing["cache_hit_ratio"] == round((8_192 + 200_000 + 4_000) / (12_000 + 250_000 + 5_000 + 100 + 100), 4)
    looping = agents["loop-agent"]
    assert looping["cost_per_success_usd"] is None and looping["cost_on_failures_usd"] == pytest.approx(LOOP_RUN_COST)
    runs = {r["trace_id"]: r for r in body["runs"]}
    loop_run = runs[WORLD.trace_id("looping")]
    assert loop_run["wasted_tokens"] == LOOP_WASTED_TOKENS
    assert loop_run["wasted_cost_usd"] == pytest.approx(LOOP_WASTED_COST, abs=1e-6)
    assert runs[WORLD.trace_id("priced")]["wasted_cost_usd"] == 0


def test_the_loops_answer_totals_the_waste_each_run_once(collector: Any) -> None:
    body = _get(collector, "/api/v1/loops", limit=1)  # the totals do not depend on the list's limit
    burn_runs = {r["trace_id"]: r for r in _get(collector, "/api/v1/burn", limit=1000)["runs"]}
    looping = {(x["trace_id"], x["run_id"]) for x in _get(collector, "/api/v1/loops")["loops"]}
    assert body["looping_runs"] == len(looping) and len(body["loops"]) == 1
    assert body["wasted_tokens"] == sum(burn_runs[t]["wasted_tokens"] for t, _ in looping)
    assert body["wasted_cost_usd"] == pytest.approx(LOOP_WASTED_COST, abs=1e-6)  # the world's one looping run


def test_loops_carry_their_wasted_cost(collector: Any) -> None:
    loops = [x for x in _get(collector, "/api/v1/loops")["loops"] if x["trace_id"] == WORLD.trace_id("looping")]
    assert [(x["kind"], x["wasted_tokens"]) for x in loops] == [("exact", LOOP_WASTED_TOKENS)]
    assert loops[0]["wasted_cost_usd"] == pytest.approx(LOOP_WASTED_COST, abs=1e-6)


def test_tools_cost_of_the_turns_after_their_failures(collector: Any) -> None:
    tools = {t["tool"]: t for t in _get(collector, "/api/v1/tools")["tools"]}
    assert tools["fetch"]["errors"] == 1
    assert tools["fetch"]["turns_after_failures"] == 1  # step 2 read fetch's failure
    assert tools["fetch"]["tokens_after_failures"] == 5_000 + 300
    assert tools["fetch"]["cost_after_failures_usd"] == pytest.approx(SONNET_SHORT_CALL, abs=1e-9)
    assert tools["search"]["cost_after_failures_usd"] == 0


def test_metrics_and_alert_metrics_in_money(collector: Any) -> None:
    metrics = collector.metrics()
    assert metrics['loopsight_cost_usd_total{agent="pricing-agent",model="claude-sonnet-4-5"}'] == pytest.approx(
        SONNET_LONG_CALL + SONNET_SHORT_CALL, abs=1e-6
    )
    assert metrics['loopsight_cost_usd_total{agent="cache-agent",model="gpt-4o"}'] == pytest.approx(
        UNCACHED_COST + CACHED_COST, abs=1e-6
    )
    assert metrics['loopsight_unpriced_calls_total{agent="pricing-agent",model="my-finetune"}'] == 2
    now = datetime.now(UTC).replace(tzinfo=None)
    window = {
        "since": (now - timedelta(hours=1)).isoformat() + "Z",
        "until": (now + timedelta(minutes=1)).isoformat() + "Z",
    }
    total = _get(collector, "/api/v1/alerts/metric", metric="cost", **window)
    all_runs = PRICED_RUN_COST + LOOP_RUN_COST + UNCACHED_COST + CACHED_COST
    assert total["value"] == pytest.approx(all_runs, abs=1e-6)
    assert total["samples"] == 4  # the unpriced run is no sample
    top = _get(collector, "/api/v1/alerts/metric", metric="cost_per_run", stat="max", agent="pricing-agent", **window)
    assert (top["value"], top["samples"], top["examples"]) == (
        pytest.approx(PRICED_RUN_COST, abs=1e-6),
        1,
        [WORLD.trace_id("priced")],
    )


def test_the_client_reads_the_same_figures(collector: Any) -> None:
    source = ApiSource(collector.url)
    assert {m["model"] for m in source.models()} >= {"gpt-4o-mini", "claude-sonnet-4-5", "gpt-4o", "my-finetune"}
    (run,) = source.runs(agent="loop-agent")
    assert run["cost_usd"] == pytest.approx(LOOP_RUN_COST, abs=1e-6)


PRICE_FILE = """
# our negotiated gpt-4o-mini price, and the fine-tune we serve ourselves
[models."gpt-4o-mini*"]
input = 0.10
output = 0.40
cached_input = 0.025

[models."my-finetune"]
provider = "openai"
input = 1.00
output = 2.00
"""


def test_a_price_file_wins_and_a_corrected_one_reprices_history_on_restart(
    start_collector: Callable[..., Any], tmp_path: Path
) -> None:
    first = start_collector()
    _send(first, WORLD)
    assert _run(first, "priced")["cost_usd"] == pytest.approx(PRICED_RUN_COST, abs=1e-6)
    first.stop()

    prices = tmp_path / "prices.toml"
    prices.write_text(PRICE_FILE, encoding="utf-8")
    second = start_collector("--prices", str(prices), db_path=first.db_path)
    mini = ((12_000 - 8_192) * 0.10 + 8_192 * 0.025 + 800 * 0.40) / MTOK
    finetune = (100 * 1.00 + 10 * 2.00) / MTOK
    run = _run(second, "priced")  # the stored run, priced again with the file's prices
    assert run["cost_usd"] == pytest.approx(mini + SONNET_LONG_CALL + SONNET_SHORT_CALL + finetune, abs=1e-6)
    assert run["unpriced_calls"] == 0
    assert _run(second, "unpriced")["cost_usd"] == pytest.approx(finetune, abs=1e-12)
    models = {m["model"]: m for m in _get(second, "/api/v1/models")["models"]}
    assert models["gpt-4o-mini"]["source"] == str(prices)
    assert models["gpt-4o"]["source"].startswith("genai-prices ")  # the library still prices the rest

    second.stop()
    prices.write_text(PRICE_FILE.replace("input = 1.00", "input = 3.00"), encoding="utf-8")  # corrected
    third = start_collector("--prices", str(prices), db_path=first.db_path)
    assert _run(third, "unpriced")["cost_usd"] == pytest.approx((100 * 3.00 + 10 * 2.00) / MTOK, abs=1e-12)


def test_a_bad_price_file_stops_the_collector_naming_the_line(
    start_collector: Callable[..., Any], tmp_path: Path
) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."gpt-4o"]\ninput = 2.5\noutput = "ten"\n', encoding="utf-8")
    server = start_collector("--prices", str(prices), wait=False)
    assert server.process.wait(timeout=60) != 0
    assert f"{prices}:3: model 'gpt-4o', key 'output': must be a number" in server.log()
    assert server.stop(signal.SIGTERM) != 0
