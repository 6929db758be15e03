"""Both stores filled with the same fixture spans, once per session.

chdb runs one data directory per process, so every scale test shares the session's
directory; each test that needs an empty store gets its own ClickHouse database.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("chdb")

from exporter_rows import create_otel_traces, request_to_otel_traces

from loopsight.ingest.pipeline import spans_to_request
from loopsight.stores import ingest_request
from loopsight.stores.clickhouse import ClickHouseConnection, chdb_open_path, connect_chdb
from loopsight.stores.clickhouse_schema import upgrade
from loopsight.stores.clickhouse_store import sync
from loopsight.stores.duckdb_store import Store

from .fixture_spans import build

_databases = itertools.count()


@pytest.fixture(scope="session")
def chdb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The process's one chdb data directory (the one already open when other tests opened it first)."""
    open_path = chdb_open_path()
    return Path(open_path) if open_path else tmp_path_factory.mktemp("chdb")


@pytest.fixture
def new_clickhouse(chdb_dir: Path) -> Callable[[], ClickHouseConnection]:
    """Factory: a migrated, empty ClickHouse database on the session's chdb engine, with the
    exporter's empty ``otel_traces`` (loopsight started first)."""

    def make() -> ClickHouseConnection:
        con = connect_chdb(str(chdb_dir), database=f"t{next(_databases)}")
        upgrade(con)
        create_otel_traces(con)
        return con

    return make


@pytest.fixture
def both_stores(
    tmp_path: Path, new_clickhouse: Callable[[], ClickHouseConnection]
) -> Iterator[Callable[..., tuple[Any, Any]]]:
    """Factory: ``load(*requests)`` puts the requests into a new DuckDB store (loopsight's
    ingest) and a new ClickHouse database (as the exporter writes ``otel_traces``), and returns
    ``(duckdb_reader, clickhouse)``."""
    stores: list[Store] = []

    def load(*requests: Any) -> tuple[Any, Any]:
        store = Store.open(str(tmp_path / f"both-{len(stores)}.duckdb"))
        stores.append(store)
        clickhouse = new_clickhouse()
        for request in requests:
            ingest_request(store, request)
            clickhouse.insert_arrow("otel_traces", request_to_otel_traces(request))
        sync(clickhouse)
        return store.reader(), clickhouse

    yield load
    for store in stores:
        store.close()


@pytest.fixture(scope="session")
def fixture_request() -> Any:
    """The fixture spans as the OTLP request an SDK exporter sends."""
    return spans_to_request(build())


@pytest.fixture(scope="session")
def duck(tmp_path_factory: pytest.TempPathFactory, fixture_request: Any) -> Iterator[Any]:
    """A DuckDB store filled through the collector's own ingest."""
    store = Store.open(str(tmp_path_factory.mktemp("duck") / "store.duckdb"))
    ingest_request(store, fixture_request)
    yield store.reader()
    store.close()


@pytest.fixture(scope="session")
def clickhouse(chdb_dir: Path, fixture_request: Any) -> ClickHouseConnection:
    """A chdb store filled as the contrib clickhouseexporter fills otel_traces."""
    con = connect_chdb(str(chdb_dir), database="parity")
    create_otel_traces(con)  # the exporter started first
    upgrade(con)
    con.insert_arrow("otel_traces", request_to_otel_traces(fixture_request))
    sync(con)
    return con
