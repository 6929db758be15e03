"""Fixtures of the analytics tests: the store described in ``analytics_world``."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest
from analytics_fixture import Recorder
from analytics_world import World, record_world

from loopsight.stores.duckdb_store import Store


@pytest.fixture(scope="package")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The store of the table in ``analytics_world``, built once through the real ingest pipeline."""
    store = Store.open(str(tmp_path_factory.mktemp("analytics") / "world.duckdb"))
    recorder = Recorder()
    runs = record_world(recorder)
    recorder.ingest(store)
    yield World(store, runs)
    store.close()


@pytest.fixture
def con(world: World) -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh reader on the world store."""
    reader = world.reader()
    yield reader
    reader.close()
