"""Dashboard fixtures: a DuckDB file filled with realistic runs, and AppTest against a source.

``filled_db`` is built once per module through the collector's real ingest pipeline (OTel SDK
spans -> OTLP request -> normalize -> Arrow -> Store). ``make_app`` points a fresh AppTest
of ``dashboard/app.py`` at a collector URL (with an optional token) or a DuckDB file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
import streamlit as st
from dashboard_traffic import Emitted, in_memory
from streamlit.testing.v1 import AppTest

from loopsight.dashboard import APP

APP_TIMEOUT = 60


@dataclass
class FilledDB:
    path: str
    emitted: Emitted


def _fill(path: str, capture_content: bool = False, **emit_kwargs: object) -> FilledDB:
    """A DuckDB file at ``path`` holding what :func:`in_memory` emits with ``emit_kwargs`` (content kept,
    as a collector started with content capture keeps it, when ``capture_content``)."""
    from loopsight.ingest.normalize import Limits
    from loopsight.ingest.pipeline import spans_to_request
    from loopsight.stores import ingest_request
    from loopsight.stores.duckdb_store import Store

    emitted, spans = in_memory(**emit_kwargs)
    store = Store.open(path)
    try:
        limits = Limits(capture_content=capture_content)
        assert ingest_request(store, spans_to_request(spans), limits) == len(spans)
    finally:
        store.close()
    return FilledDB(path, emitted)


@pytest.fixture(scope="module")
def filled_db(tmp_path_factory: pytest.TempPathFactory) -> FilledDB:
    """A closed DuckDB file holding two rounds of every default traffic scenario."""
    return _fill(str(tmp_path_factory.mktemp("dashboard") / "filled.duckdb"), rounds=2)


@pytest.fixture(scope="module")
def looping_db(tmp_path_factory: pytest.TempPathFactory) -> FilledDB:
    """A closed DuckDB file with a success, an exact loop and a run that loops twice (exact and repeated_error)."""
    return _fill(
        str(tmp_path_factory.mktemp("dashboard-loops") / "loops.duckdb"),
        rounds=1,
        scenarios=("success", "loop", "error_loop"),
    )


@pytest.fixture(scope="module")
def ranking_db(tmp_path_factory: pytest.TempPathFactory) -> FilledDB:
    """A closed DuckDB file with a tool failing 6 of 12 calls, one failing its only call, a run with captured
    content and a success."""
    return _fill(
        str(tmp_path_factory.mktemp("dashboard-ranking") / "ranking.duckdb"),
        capture_content=True,
        rounds=1,
        scenarios=("flaky", "one_failure", "captured", "success"),
    )


@pytest.fixture(scope="module")
def extras_db(tmp_path_factory: pytest.TempPathFactory) -> FilledDB:
    """A closed DuckDB file with three turns of one conversation (a loop across its runs), runs on an
    unpriced model, runs whose tool calls carry no arguments, successes and exact loops."""
    return _fill(
        str(tmp_path_factory.mktemp("dashboard-extras") / "extras.duckdb"),
        rounds=3,
        scenarios=("success", "loop", "unpriced", "no_arguments", "session_turn"),
    )


@pytest.fixture(scope="module")
def budget_db(tmp_path_factory: pytest.TempPathFactory) -> FilledDB:
    """A closed DuckDB file with 21 successful runs of 3 steps and 21 exact loops of 4 steps, one agent:
    enough successes (20) for the budget advisor to recommend."""
    return _fill(
        str(tmp_path_factory.mktemp("dashboard-budgets") / "budgets.duckdb"), rounds=21, scenarios=("success", "loop")
    )


@pytest.fixture(scope="module")
def empty_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A migrated DuckDB file with no spans."""
    from loopsight.stores.duckdb_store import Store

    path = str(tmp_path_factory.mktemp("dashboard-empty") / "empty.duckdb")
    Store.open(path).close()
    return path


@pytest.fixture
def make_app(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., AppTest]]:
    """``make_app(collector=URL, token=None)`` or ``make_app(db=PATH)``: an AppTest not yet run."""
    st.cache_data.clear()

    def make(
        *,
        collector: str | None = None,
        db: str | None = None,
        token: str | None = None,
        query: dict[str, str] | None = None,
    ) -> AppTest:
        st.cache_data.clear()
        monkeypatch.delenv("LOOPSIGHT_DASHBOARD_DB", raising=False)
        monkeypatch.delenv("LOOPSIGHT_TOKEN", raising=False)
        if db:
            monkeypatch.setenv("LOOPSIGHT_DASHBOARD_DB", db)
        if collector:
            monkeypatch.setenv("LOOPSIGHT_COLLECTOR_URL", collector)
        if token:
            monkeypatch.setenv("LOOPSIGHT_TOKEN", token)
        app = AppTest.from_file(str(APP), default_timeout=APP_TIMEOUT)
        for key, value in (query or {}).items():
            app.query_params[key] = value
        return app

    yield make
    st.cache_data.clear()
