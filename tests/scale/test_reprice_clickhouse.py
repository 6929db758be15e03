"""ClickHouse stores each call's and run's cost as DuckDB does, and a writer opening with other
prices prices the stored history again (``clickhouse_store.reprice``): the same figures as a DuckDB
store given those prices. A store whose tables just gained the cost columns gets them at once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cost_world import build

from loopsight import analytics
from loopsight.ingest.otlp import decode_request
from loopsight.prices import PriceBook
from loopsight.stores import ingest_request
from loopsight.stores.clickhouse_schema import upgrade
from loopsight.stores.clickhouse_store import reprice
from loopsight.stores.duckdb_store import Store

BOOK = PriceBook.parse(
    '[models."my-finetune"]\ninput = 1.00\noutput = 2.00\n\n[models."gpt-4o"]\ninput = 1.50\noutput = 6.00\n'
)


def _answers(reader: Any) -> dict[str, Any]:
    return {
        "runs": analytics.list_runs(reader, limit=100),
        "models": analytics.models(reader),
        "burn": analytics.burn(reader),
        "stored": reader.rows(
            "SELECT trace_id, run_id, round(cost_usd, 9) AS cost, unpriced_calls FROM run_facts ORDER BY trace_id, run_id"
        ),
    }


def test_a_reprice_stores_the_history_priced_again_as_duckdb_does(
    tmp_path: Path, both_stores: Callable[..., tuple[Any, Any]]
) -> None:
    request = decode_request(build().body(), "application/json", None, 10**9)
    duck, clickhouse = both_stores(request)
    default = _answers(duck)
    assert _answers(clickhouse) == default

    store = Store.open(str(tmp_path / "priced.duckdb"), prices=BOOK)
    try:
        ingest_request(store, request)
        want = _answers(store.reader())
    finally:
        store.close()
    assert want != default
    assert reprice(clickhouse, BOOK) > 0
    assert _answers(clickhouse) == want
    reprice(clickhouse)  # the bundled table alone again
    assert _answers(clickhouse) == default
    tables = clickhouse.execute("SELECT name FROM system.tables WHERE database = currentDatabase()").fetchall()
    assert not [name for (name,) in tables if name.endswith("_repriced")]


def test_a_store_gaining_the_cost_columns_is_priced_when_a_writer_opens(
    both_stores: Callable[..., tuple[Any, Any]],
) -> None:
    duck, clickhouse = both_stores(decode_request(build().body(), "application/json", None, 10**9))
    clickhouse.command("ALTER TABLE run_calls DROP COLUMN priced, DROP COLUMN cost_usd, DROP COLUMN cache_saved_usd")
    clickhouse.command(
        "ALTER TABLE run_facts DROP COLUMN cost_usd, DROP COLUMN cache_saved_usd, DROP COLUMN unpriced_calls"
    )
    upgrade(clickhouse)  # the columns, empty, and every trace queued
    reprice(clickhouse)  # as ClickHouseStore.open does next: before any pass, the costs are there
    assert _answers(clickhouse) == _answers(duck)
