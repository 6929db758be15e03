"""The dashboard on a ClickHouse store (chdb): ``loopsight dashboard --store URL`` through AppTest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("streamlit")

import streamlit as st
from streamlit.testing.v1 import AppTest

from loopsight.analytics.loops import loops
from loopsight.analytics.runs import list_runs
from loopsight.dashboard import APP, ui
from loopsight.dashboard.data import STORE_ENV, StoreSource, source_from_env


def _app(monkeypatch: pytest.MonkeyPatch, url: str, page: str | None = None) -> AppTest:
    st.cache_data.clear()
    for name in ("LOOPSIGHT_DASHBOARD_DB", "LOOPSIGHT_TOKEN", "LOOPSIGHT_COLLECTOR_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(STORE_ENV, url)
    app = AppTest.from_file(str(APP), default_timeout=90)
    app.query_params["range"] = "all"
    app.run()
    return app.switch_page(ui.page(page)).run() if page else app


def test_overview_and_runs_pages_read_a_clickhouse_store(
    monkeypatch: pytest.MonkeyPatch, duck: Any, clickhouse: Any, chdb_dir: Path
) -> None:
    url = f"chdb://{chdb_dir}?database=parity"
    assert source_from_env({STORE_ENV: url}) == StoreSource(url)
    app = _app(monkeypatch, url)
    assert not app.exception and not app.error, [e.value for e in [*app.exception, *app.error]]
    assert "Runs" in {m.label for m in app.metric}  # the KPI tiles cover the last 24 h: the 2025 fixture is not in them
    assert any("ClickHouse store" in str(c.value) for c in app.sidebar.caption)

    runs = _app(monkeypatch, url, "runs")
    assert not runs.exception and not runs.error, [e.value for e in [*runs.exception, *runs.error]]
    (table,) = [t.value for t in runs.dataframe][:1]
    assert len(table) == len(list_runs(duck, limit=1000)) == 21

    looping = _app(monkeypatch, url, "loops")
    assert not looping.exception and not looping.error, [e.value for e in [*looping.exception, *looping.error]]
    (found,) = [t.value for t in looping.dataframe][:1]
    expected = loops(duck)
    assert len(found) == len(expected) == 8 and set(found["tool"]) == {loop["tool"] for loop in expected} == {
        "search",
        "web_search",
        "fetch_page",
        "lookup_order,track_package",
    }
    st.cache_data.clear()


def test_an_unreachable_store_shows_the_error_state(monkeypatch: pytest.MonkeyPatch) -> None:
    app = _app(monkeypatch, "clickhouse://127.0.0.1:1/otel")
    assert not app.exception
    assert any("Cannot read ClickHouse store" in str(e.value) for e in app.error)
    st.cache_data.clear()


def test_the_alerts_page_reads_alert_state_from_clickhouse(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, new_clickhouse: Any, fixture_request: Any
) -> None:
    from datetime import datetime

    from exporter_rows import request_to_otel_traces

    from loopsight.alerts import Evaluator, Notifier
    from loopsight.stores.clickhouse_store import sync

    con = new_clickhouse()
    con.insert_arrow("otel_traces", request_to_otel_traces(fixture_request))
    sync(con)
    rules = tmp_path / "rules.toml"
    rules.write_text(
        '[[rules]]\nname = "loops"\nmetric = "loop_rate"\nwindow = "1d"\nthreshold = 0.1\nnotify = ["log"]\n'
    )
    evaluator = Evaluator(con.cursor, str(rules), notifier=Notifier())
    (result,) = evaluator.evaluate_once(datetime(2025, 3, 1, 12, 0))
    assert result.state.state == "firing"

    app = _app(monkeypatch, con.url.redacted(), "alerts")
    assert not app.exception and not app.error, [e.value for e in [*app.exception, *app.error]]
    assert not [i.value for i in app.info if "not available" in str(i.value)]
    assert {m.label: m.value for m in app.metric} == {"Rules": "1", "Firing": "1", "Failed notifications": "0"}
    (rules_table, history) = [t.value for t in app.dataframe][:2]
    assert list(rules_table["name"]) == ["loops"] and list(history["to_state"]) == ["firing"]
    st.cache_data.clear()
