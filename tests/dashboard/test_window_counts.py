"""Counts and charts over the whole selected window, whatever the page lists, and the Runs page's search:
through AppTest on DuckDB files with known traffic, with the pages' list sizes made small so that the
window holds more than they list."""

from __future__ import annotations

from dashboard_helpers import assert_clean, charts, page, tables, texts
from dashboard_traffic import HOSTILE_AGENT

from loopsight.dashboard import ui
from loopsight.dashboard.data import DuckDBSource


def test_runs_caption_and_chart_count_the_whole_window_not_the_page(filled_db, make_app, monkeypatch) -> None:
    monkeypatch.setattr(ui, "RUNS_PAGE", 3)
    app = page(make_app(db=filled_db.path), "runs")
    assert_clean(app)
    assert len(tables(app)[0]) == 3, "one page of runs"
    assert f"{filled_db.emitted.count} runs (last 24 hours); rows 1–3, newest first" in texts(app)
    ((_, (counted,)),) = charts(app)
    assert counted["runs"].sum() == filled_db.emitted.count, "the chart counts every run of the window"
    pages = -(-filled_db.emitted.count // 3)
    app.number_input(key="runs_offset").set_value(pages).run()
    assert_clean(app)
    last = tables(app)[0]
    assert len(last) == filled_db.emitted.count - 3 * (pages - 1)
    assert f"rows {3 * (pages - 1) + 1}–{filled_db.emitted.count}" in texts(app)


def test_runs_over_time_counts_every_run_the_pages_own_filters_keep(filled_db, make_app, monkeypatch) -> None:
    monkeypatch.setattr(ui, "RUNS_PAGE", 1)  # the list holds one run: the chart cannot be summed from it
    app = page(make_app(db=filled_db.path), "runs")
    tool = next(t for t in app.selectbox(key="runs_tool").options if t != "any")
    app.selectbox(key="runs_tool").select(tool).run()
    assert_clean(app)
    assert len(tables(app)[0]) == 1
    expected = DuckDBSource(filled_db.path).runs_page(tool=tool, limit=1)["total"]
    ((_, (counted,)),) = charts(app)
    assert expected > 1 and counted["runs"].sum() == expected, "counted on the server with the tool filter"


def test_loops_tiles_and_chart_count_every_loop_beyond_the_list(looping_db, make_app, monkeypatch) -> None:
    monkeypatch.setattr(ui, "LISTED_LOOPS", 1)
    app = page(make_app(db=looping_db.path), "loops")
    assert_clean(app)
    (listed,) = tables(app)
    assert len(listed) == 1
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Loops found"] == "3", "exact and repeated_error of one run, exact of another"
    # every looping run's waste, each run once, as Token burn counts it: not only the one loop listed
    source = DuckDBSource(looping_db.path)
    looping = {(x["trace_id"], x["run_id"]) for x in source.loops()}
    waste = sum(r["wasted_tokens"] for r in source.burn(limit=1000)["runs"] if (r["trace_id"], r["run_id"]) in looping)
    assert len(looping) == 2 and metrics["Tokens spent after a loop began"] == f"{waste:,}"
    assert "By kind over the window: exact 2, repeated error 1." in texts(app)
    ((_, (tools,)), (_, (over_time,))) = charts(app)
    assert dict(over_time.groupby("kind")["count"].sum()) == {"exact": 2, "repeated_error": 1}
    # the tools that loop most, counted on the server (/api/v1/loops/tools), not from the one loop listed
    assert dict(tools.groupby("kind")["loops"].sum()) == {"exact": 2, "repeated_error": 1}


def test_stalls_count_by_kind_is_the_windows(filled_db, make_app) -> None:
    app = page(make_app(db=filled_db.path), "stalls")
    assert_clean(app)
    (_time_lost, (_, (by_kind,))) = charts(app)
    expected = {k: n for k, n in DuckDBSource(filled_db.path).stall_counts().items() if k != "stuck"}
    labels = {"slow_call": "slow call", "backoff": "retry backoff", "idle_gap": "idle gap"}
    assert dict(by_kind.groupby("kind")["n"].sum()) == {labels[k]: n for k, n in expected.items()}


def test_search_finds_runs_and_goes_into_the_url(filled_db, make_app) -> None:
    app = page(make_app(db=filled_db.path), "runs")
    app.text_input(key="runs_q").input("refund_order").run()
    assert_clean(app)
    found = set(tables(app)[0]["trace_id"])
    assert found == set(filled_db.emitted.traces["fatal"]), "the runs that called the tool"
    assert app.query_params.get("q") in ("refund_order", ["refund_order"])
    assert "matching refund_order" in texts(app)
    prefix = filled_db.emitted.first("loop")[:10]
    linked = page(make_app(db=filled_db.path, query={"q": prefix}), "runs")
    assert_clean(linked)
    assert linked.text_input(key="runs_q").value == prefix, "a link with ?q= opens with the search"
    assert list(tables(linked)[0]["trace_id"]) == [filled_db.emitted.first("loop")]
    nothing = page(make_app(db=filled_db.path), "runs")
    nothing.text_input(key="runs_q").input("no-such-thing-anywhere").run()
    assert "No runs match these filters: last 24 hours, search no-such-thing-anywhere." in texts(nothing)
    nothing.text_input(key="runs_q").input("").run()
    assert "q" not in nothing.query_params and len(tables(nothing)[0]) == filled_db.emitted.count


def test_the_runs_page_filters_are_in_the_link(filled_db, make_app) -> None:
    """Status, termination reason, tool, tokens and the page were not kept in the URL: a link to
    the 13 failed runs opened on all of them."""
    app = page(make_app(db=filled_db.path), "runs")
    app.selectbox(key="runs_status").select("error").run()
    app.selectbox(key="runs_reason").select("loop_detected").run()
    assert_clean(app)
    shown = set(tables(app)[0]["trace_id"])
    assert shown and len(shown) < filled_db.emitted.count
    query = {k: (v[0] if isinstance(v, list) else v) for k, v in dict(app.query_params).items()}
    assert {"status": "error", "reason": "loop_detected"}.items() <= query.items()
    linked = page(make_app(db=filled_db.path, query=query), "runs")
    assert_clean(linked)
    assert linked.selectbox(key="runs_status").value == "error"
    assert not [w.value for w in linked.warning if "Session State" in str(w.value)]
    assert set(tables(linked)[0]["trace_id"]) == shown
    app.selectbox(key="runs_status").select("any").run()
    assert "status" not in app.query_params
    odd = page(make_app(db=filled_db.path, query={"status": "nonsense", "min_tokens": "x", "page": "-3"}), "runs")
    assert_clean(odd)
    assert len(tables(odd)[0]) == filled_db.emitted.count, "a link's unknown values are ignored"


def test_search_by_agent_name_part(filled_db, make_app) -> None:
    app = page(make_app(db=filled_db.path), "runs")
    app.text_input(key="runs_q").input("web-res").run()
    assert set(tables(app)[0]["agent"]) == {"web-researcher"}
    assert HOSTILE_AGENT not in set(tables(app)[0]["agent"])
