"""Every page through AppTest on a DuckDB file with known traffic: charts drawn, the numbers the
traffic implies, filters kept in the URL, empty states, and hostile values kept inert."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from dashboard_helpers import assert_clean, charts, page, tables, texts
from dashboard_traffic import HOSTILE_AGENT, HOSTILE_LINK

import loopsight.dashboard
from loopsight.dashboard import ui

PAGES = ["overview", "runs", "run", "sessions", "stalls", "loops", "burn", "tools", "budgets", "alerts"]


def _trace_ids(ids) -> set[str]:
    return {str(trace_id) for trace_id in ids if trace_id}


def test_overview_tiles_terminations_and_offenders(filled_db, make_app) -> None:
    app = make_app(db=filled_db.path)
    app.run()
    assert_clean(app)
    tiles = {m.label: m.value for m in app.metric}
    assert tiles["Runs"] == "10"
    assert tiles["Success rate"] == "40.0%"  # success + retried_timeout of 5 scenarios
    assert tiles["Loop rate"] == "20.0%"
    ((_spec, (terminations,)),) = charts(app)
    assert dict(terminations.groupby("termination_reason")["runs"].sum()) == {
        "completed": 4,
        "loop_detected": 2,
        "fatal_error": 2,
        "error": 2,
    }
    top_tokens, top_loops, _stalls, failing = tables(app)
    assert _trace_ids(top_loops["trace_id"]) == set(filled_db.emitted.traces["loop"])
    assert _trace_ids(top_tokens["trace_id"][:2]) == set(filled_db.emitted.traces["loop"]), "loop runs spend the most"
    assert set(failing["tool"]) == {"refund_order", HOSTILE_LINK}
    links = {p.label for p in app.get("page_link")}
    assert {"Token burn →", "Loops →", "Stalls →", "Tools →"} <= links


def test_stalls_page_lists_stuck_runs_backoff_and_idle_gaps(filled_db, make_app) -> None:
    app = page(make_app(db=filled_db.path), "stalls")
    assert_clean(app)
    stuck, past = tables(app)
    assert _trace_ids(stuck["trace_id"]) == set(filled_db.emitted.traces["stuck"])
    assert "2 run(s) in flight with no progress" in texts(app)
    assert set(past["kind"]) >= {"retry backoff", "idle gap"}
    assert _trace_ids(past["trace_id"]) >= set(filled_db.emitted.traces["retried_timeout"])
    assert len(charts(app)) == 2


def test_loops_page(filled_db, make_app) -> None:
    app = page(make_app(db=filled_db.path), "loops")
    assert_clean(app)
    (loops,) = tables(app)
    assert _trace_ids(loops["trace_id"]) == set(filled_db.emitted.traces["loop"])
    runs = tables(page(make_app(db=filled_db.path), "runs"))[0]
    started = dict(zip(runs["trace_id"], runs["started_at"], strict=False))
    assert all(started[trace] == at for trace, at in zip(loops["trace_id"], loops["started_at"], strict=False)), (
        "each row links its own run"
    )
    assert set(loops["tool"]) == {"query_order"} and set(loops["kind"]) == {"exact"}
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Loop rate (runs with a loop)"] == "20.0%"
    assert len(charts(app)) == 2


def test_burn_page(filled_db, make_app) -> None:
    app = page(make_app(db=filled_db.path), "burn")
    assert_clean(app)
    agents, top = tables(app)
    assert set(agents["agent"]) == {"order-assistant", "web-researcher", "refund-bot", HOSTILE_AGENT}
    assert _trace_ids(top["trace_id"][:2]) == set(filled_db.emitted.traces["loop"])
    ((_, (curve,)),) = charts(app)
    order = curve[curve["agent"] == "order-assistant"].sort_values("step")
    assert list(order["step"]) == [0, 1, 2, 3] and order["input_tokens"].is_monotonic_increasing


def test_tools_page(filled_db, make_app) -> None:
    app = page(make_app(db=filled_db.path), "tools")
    assert_clean(app)
    (table,) = tables(app)
    fetch = table[table["tool"] == "fetch_page"].iloc[0]
    assert (fetch["calls"], fetch["errors"], fetch["retries"]) == (2, 0, 4)
    refund = table[table["tool"] == "refund_order"].iloc[0]
    assert refund["fail_rate"] == 1.0 and refund["errors_by_class"] == "fatal: 2"
    (_, (by_class,)), (_, (_latency,)) = charts(app)
    assert set(by_class["error_class"]) == {"fatal", "garbage"}


def test_alerts_page_without_rules_says_how_to_add_them(filled_db, make_app) -> None:
    app = page(make_app(db=filled_db.path), "alerts")
    assert_clean(app)
    assert "No alert rules loaded" in texts(app) and "--rules FILE" in texts(app)


def test_filters_come_from_the_url(filled_db, make_app) -> None:
    app = make_app(db=filled_db.path, query={"range": "1h", "agent": "refund-bot"})
    app.run()
    assert_clean(app)
    assert app.sidebar.selectbox(key="f_agent").value == "refund-bot"
    assert app.sidebar.selectbox(key="f_range").value == "1h"
    assert {m.label: m.value for m in app.metric}["Runs"] == "2"
    page(app, "runs")
    assert set(tables(app)[0]["agent"]) == {"refund-bot"}
    assert app.query_params == {"range": "1h", "agent": "refund-bot"}, "navigation keeps the filters in the URL"


def test_chosen_filters_go_to_the_url_and_survive_a_page_switch(filled_db, make_app) -> None:
    app = make_app(db=filled_db.path, query={"agent": "refund-bot"})
    app.run()
    app.sidebar.selectbox(key="f_agent").select("(all)").run()
    app.sidebar.selectbox(key="f_range").select("15m").run()
    assert_clean(app)
    assert app.query_params == {"range": "15m"}
    page(app, "runs")
    assert app.sidebar.selectbox(key="f_range").value == "15m"
    assert "last 15 minutes" in texts(app)
    assert app.query_params == {"range": "15m"}
    assert 0 < len(tables(app)[0]) < filled_db.emitted.count, "runs of the last 30 minutes are cut to the last 15"
    app.sidebar.selectbox(key="f_range").select("all").run()
    app.selectbox(key="runs_tool").select("refund_order").run()
    assert _trace_ids(tables(app)[0]["trace_id"]) == set(filled_db.emitted.traces["fatal"])


def _param(app, name: str) -> str:
    value = app.query_params[name]
    return value[0] if isinstance(value, list) else value


@pytest.mark.parametrize("name", PAGES)
def test_every_page_has_an_empty_state(name, empty_db, make_app) -> None:
    app = page(make_app(db=empty_db), name)
    assert not app.exception, [e.value for e in app.exception]
    shown = texts(app)
    if name == "alerts":
        assert "No alert rules loaded" in shown
    else:
        assert "No agent runs received yet" in shown or "No runs match" in shown, shown
        assert "loopsight ingest" in shown


def test_missing_file_is_an_error_state(tmp_path, make_app) -> None:
    app = make_app(db=str(tmp_path / "nope.duckdb"))
    app.run()
    assert not app.exception
    assert "there is no DuckDB file at" in texts(app)


def _outside_code(markdown: str) -> str:
    """The markdown with its code spans (shown verbatim, never parsed) removed."""
    return re.sub(r"(`+)(.+?)\1", "", markdown)


def _assert_inert(markdown: str, where: str) -> None:
    text = _outside_code(markdown)
    for needle in ("<script", "](http", "http:", "www.evil"):
        assert needle not in text, f"{where}: {markdown!r}"


def test_hostile_values_are_never_markdown(filled_db, make_app) -> None:
    trace = filled_db.emitted.first("hostile")
    app = make_app(db=filled_db.path, query={"run": trace})
    app.run()
    assert_clean(app)
    raw = [
        str(e.value)
        for kind in ("markdown", "caption", "subheader", "title", "info", "warning", "error")
        for e in app.get(kind)
    ]
    assert any(ui.literal(HOSTILE_AGENT) in text for text in raw), "the agent name, verbatim in a code span"
    detail = tables(app)[-1]
    assert HOSTILE_LINK in set(detail["value"]), "the raw value is shown as text in the detail table"
    for name in PAGES:
        page(app, name)
        for kind in ("markdown", "caption", "subheader", "info", "warning", "error"):
            for element in app.get(kind):
                _assert_inert(str(element.value), name)
    filtered = make_app(db=filled_db.path, query={"agent": HOSTILE_AGENT})
    filtered.run()
    for name in ("overview", "runs", "tools"):
        page(filtered, name)
        assert HOSTILE_AGENT in texts(filtered)
        for element in filtered.get("caption"):
            _assert_inert(str(element.value), name)


def test_no_page_renders_html() -> None:
    root = Path(loopsight.dashboard.__file__).parent
    for source in root.rglob("*.py"):
        assert "unsafe_allow_html" not in source.read_text(), source
        assert "st.html" not in source.read_text(), source


def test_tokens_after_a_loop_began_count_each_run_once(looping_db, make_app) -> None:
    app = page(make_app(db=looping_db.path), "loops")
    assert_clean(app)
    (loops,) = tables(app)
    twice = looping_db.emitted.first("error_loop")
    assert sorted(loops.loc[loops["trace_id"] == twice, "kind"]) == ["exact", "repeated_error"]
    burn = tables(page(make_app(db=looping_db.path), "burn"))[-1]
    per_run = int(burn["wasted_tokens"].sum())
    assert per_run > 0 and per_run < int(loops["wasted_tokens"].sum()), "the twice-looping run is not counted twice"
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Tokens spent after a loop began"] == f"{per_run:,}"


def test_overview_of_an_empty_store_shows_no_change(empty_db, make_app) -> None:
    app = make_app(db=empty_db)
    app.run()
    assert_clean(app)
    assert {m.label: m.value for m in app.metric}["Runs"] == "0"
    assert [m.delta for m in app.metric if m.delta] == [], "nothing to compare: no '+0'"
