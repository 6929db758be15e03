"""The budget world (``budget_world``), built once through the real ingest into a DuckDB file."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analytics"))

from analytics_fixture import Recorder, RunInfo
from budget_world import record

from loopsight.prices import PriceBook
from loopsight.stores.duckdb_store import Store


@dataclass
class BudgetWorld:
    store: Store
    path: str
    runs: dict[str, list[RunInfo]]


@pytest.fixture(scope="package")
def budget_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BudgetWorld]:
    folder = tmp_path_factory.mktemp("budgets")
    path = str(folder / "budgets.duckdb")
    # the fixture's model priced at $1 per million tokens in and out: a step's cost is its tokens / 10^6
    prices = folder / "prices.toml"
    prices.write_text('[models."gpt-test"]\ninput = 1.0\noutput = 1.0\n', encoding="utf-8")
    store = Store.open(path, prices=PriceBook.from_file(str(prices)))
    recorder = Recorder()
    runs = record(recorder)
    recorder.ingest(store)
    yield BudgetWorld(store, path, runs)
    store.close()


@pytest.fixture
def con(budget_world: BudgetWorld) -> Iterator[object]:
    reader = budget_world.store.reader()
    yield reader
    reader.close()
