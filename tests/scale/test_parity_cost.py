"""The cost questions answer the same on DuckDB and on ClickHouse (chdb), issue 22.

Both stores get the runs of ``cost_world`` (known models, cache hits, a long-context tier, an
unknown model, a loop, a failed tool) and the shared parity fixture: DuckDB through loopsight's
ingest, ClickHouse as the OpenTelemetry Collector's exporter writes ``otel_traces``. Each store
prices its calls from its own ``model_prices`` rows, at read time.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cost_world import PRICED_RUN_COST, build
from exporter_rows import create_otel_traces, request_to_otel_traces

from loopsight import analytics
from loopsight.analytics.metrics import MetricSpec, cost_totals, measure
from loopsight.ingest.otlp import decode_request
from loopsight.ingest.pipeline import spans_to_request
from loopsight.stores import ingest_request
from loopsight.stores.clickhouse import connect_chdb
from loopsight.stores.clickhouse_schema import upgrade
from loopsight.stores.clickhouse_store import sync
from loopsight.stores.duckdb_store import Store

from .fixture_spans import build as fixture_spans
from .test_parity import _same

WORLD = build()
SINCE = datetime.fromtimestamp(WORLD.start_ns / 1e9, UTC).replace(tzinfo=None, microsecond=0) - timedelta(hours=1)
UNTIL = SINCE + timedelta(hours=3)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, chdb_dir: Path) -> Iterator[tuple[Any, Any]]:
    requests = [
        decode_request(WORLD.body(), "application/json", None, 10**9),
        spans_to_request(fixture_spans()),
    ]
    store = Store.open(str(tmp_path_factory.mktemp("cost") / "cost.duckdb"))
    clickhouse = connect_chdb(str(chdb_dir), database="parity_cost")
    upgrade(clickhouse)
    create_otel_traces(clickhouse)
    for request in requests:
        ingest_request(store, request)
        clickhouse.insert_arrow("otel_traces", request_to_otel_traces(request))
    sync(clickhouse)
    yield store.reader(), clickhouse
    store.close()


def test_the_stores_hold_the_same_prices(stores: tuple[Any, Any]) -> None:
    duck, clickhouse = stores
    sql = "SELECT * FROM model_prices ORDER BY provider, model, valid_from, input_from"
    assert clickhouse.rows(sql) == duck.rows(sql)
    assert len(duck.rows(sql)) >= 8  # the world's and the fixture's models, the tiered one twice


def test_runs_and_trace_costs_are_the_same(stores: tuple[Any, Any]) -> None:
    duck, clickhouse = stores
    expected = _same(analytics.list_runs(duck, limit=1000))
    assert _same(analytics.list_runs(clickhouse, limit=1000)) == expected
    priced = next(r for r in expected if r["trace_id"] == WORLD.trace_id("priced"))
    assert priced["cost_usd"] == pytest.approx(PRICED_RUN_COST, abs=1e-6)
    assert any(r["cost_usd"] is None for r in expected)  # unpriced runs compared too
    for name in ("priced", "looping"):
        trace = WORLD.trace_id(name)
        assert _same(analytics.trace_detail(clickhouse, trace)) == _same(analytics.trace_detail(duck, trace))


@pytest.mark.parametrize("filters", [{}, {"agent": "pricing-agent"}, {"since": SINCE, "until": UNTIL}])
def test_burn_loops_tools_and_models_are_the_same(stores: tuple[Any, Any], filters: dict[str, Any]) -> None:
    duck, clickhouse = stores
    for question in (analytics.burn, analytics.loops, analytics.tool_stats, analytics.models):
        expected = _same(question(duck, **filters))
        assert _same(question(clickhouse, **filters)) == expected, question.__name__
    burn = analytics.burn(duck)
    assert {a["agent"] for a in burn["agents"] if a["cost_per_success_usd"] is not None} >= {"pricing-agent"}
    assert any(loop["wasted_cost_usd"] for loop in analytics.loops(duck))
    assert any(t["cost_after_failures_usd"] for t in analytics.tool_stats(duck))


@pytest.mark.parametrize(
    "spec",
    [
        MetricSpec("cost"),
        MetricSpec("cost", agent="pricing-agent"),
        MetricSpec("cost_per_run", stat="p50"),
        MetricSpec("cost_per_run", stat="p95"),
        MetricSpec("cost_per_run", stat="max", agent="cache-agent"),
    ],
    ids=lambda s: f"{s.metric}-{s.stat}-{s.agent}",
)
def test_alert_metrics_are_the_same(stores: tuple[Any, Any], spec: MetricSpec) -> None:
    duck, clickhouse = stores
    expected = measure(duck, spec, SINCE, UNTIL)
    assert expected.samples > 0 and expected.value
    got = measure(clickhouse, spec, SINCE, UNTIL)
    assert (got.samples, got.examples) == (expected.samples, expected.examples)
    assert got.value == pytest.approx(expected.value, rel=1e-12)


def test_cost_counters_are_the_same(stores: tuple[Any, Any]) -> None:
    duck, clickhouse = stores
    since = datetime(2000, 1, 1)
    expected = {(g.name, g.labels): g.value for g in cost_totals(duck, since)}
    got = {(g.name, g.labels): g.value for g in cost_totals(clickhouse, since)}
    assert got.keys() == expected.keys() and expected
    assert all(got[k] == pytest.approx(v, rel=1e-12) for k, v in expected.items())
