"""Through AppTest on DuckDB files with known traffic: the agent on every table of runs, loops, stalls
and tools; failing tools ranked so that few samples do not win; one colour per meaning on two pages;
the compare view; the custom UTC range; a stuck run that says so; captured content in the span detail."""

from __future__ import annotations

import json
from datetime import timedelta

import pandas as pd
from dashboard_helpers import assert_clean, charts, page, tables, texts
from dashboard_traffic import HOSTILE_AGENT, STUCK_MINUTES_AGO

from loopsight.dashboard import colors, filters, frames


def _color_scale(spec: str, field: str) -> dict[str, str]:
    """value -> colour of the colour encoding on ``field`` anywhere in a chart spec (layers included)."""
    found: dict[str, str] = {}

    def walk(node) -> None:
        if isinstance(node, dict):
            color = (node.get("encoding") or {}).get("color") or {}
            if color.get("field") == field and "scale" in color:
                found.update(zip(color["scale"]["domain"], color["scale"]["range"], strict=True))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(spec))
    return found


def test_every_table_of_runs_loops_stalls_and_tools_names_the_agent(filled_db, make_app) -> None:
    emitted = filled_db.emitted
    app = make_app(db=filled_db.path)
    app.run()
    assert_clean(app)
    top_tokens, top_loops, top_stalls, failing = tables(app)
    for table in (top_tokens, top_loops, top_stalls, failing):
        assert "agent" in table.columns
    assert set(top_loops["agent"]) == {"order-assistant"}
    assert set(failing.set_index("tool")["agent"].items()) >= {("refund_order", "refund-bot")}

    (loops,) = tables(page(app, "loops"))
    assert dict(zip(loops["trace_id"], loops["agent"], strict=True)) == dict.fromkeys(
        emitted.traces["loop"], "order-assistant"
    )
    stuck, past = tables(page(app, "stalls"))
    assert "agent" in stuck.columns and set(stuck["agent"]) == {"—"}, "a stuck run's agent is not known yet"
    assert set(past.loc[past["trace_id"].isin(emitted.traces["retried_timeout"]), "agent"]) == {"web-researcher"}
    (tools,) = tables(page(app, "tools"))
    assert tools.set_index("tool").loc["fetch_page", "agent"] == "web-researcher"
    runs = tables(page(app, "runs"))[0]
    assert set(runs["agent"]) == {"order-assistant", "web-researcher", "refund-bot", HOSTILE_AGENT}
    _agents, top = tables(page(app, "burn"))
    assert "agent" in top.columns

    one = make_app(db=filled_db.path, query={"agent": "refund-bot"})
    one.run()
    (tools,) = tables(page(one, "tools"))
    assert set(tools["agent"]) == {"refund-bot"}


def test_failing_tools_rank_by_what_their_calls_show_not_by_one_sample(ranking_db, make_app) -> None:
    app = make_app(db=ranking_db.path)
    app.run()
    assert_clean(app)
    failing = tables(app)[-1]
    assert list(failing["tool"][:2]) == ["flaky_search", "rare_export"], "6 of 12 failing outranks 1 of 1"
    assert list(failing["fail_rate"][:2]) == ["50.0%", "100.0%"]
    assert ("Wilson" in texts(app) and "few" in texts(app).lower()) or "only call" in texts(app)
    (tools,) = tables(page(app, "tools"))
    order = list(tools["tool"])
    assert order.index("flaky_search") < order.index("rare_export")
    ranked = frames.rank_failing(pd.DataFrame({"tool": ["once", "often"], "calls": [1, 288], "errors": [1, 132]}))
    assert list(ranked["tool"]) == ["often", "once"]


def test_one_colour_per_meaning_on_two_pages(filled_db, make_app) -> None:
    """A termination reason has the same colour on the overview and on the Runs page; a failure is the same
    red on the Runs page and in the waterfall; loop kinds keep theirs on both charts of the Loops page."""
    app = make_app(db=filled_db.path)
    app.run()
    ((overview_spec, _),) = charts(app)
    on_overview = _color_scale(overview_spec, "termination_reason")
    page(app, "runs")
    ((runs_spec, _),) = charts(app)
    by_status = _color_scale(runs_spec, "status")
    app.selectbox(key="runs_color").select("termination_reason").run()
    assert_clean(app)
    ((runs_spec, _),) = charts(app)
    on_runs = _color_scale(runs_spec, "termination_reason")
    assert on_overview == on_runs == colors.TERMINATION
    assert on_runs["completed"] == by_status["ok"] == colors.OK
    assert on_runs["error"] == by_status["error"] == colors.ERROR

    timeline = make_app(db=filled_db.path, query={"run": filled_db.emitted.first("fatal")})
    timeline.run()
    (waterfall_spec, (bars, _markers)), _tokens = charts(timeline)
    assert _color_scale(waterfall_spec, "paint")["failed"] == by_status["error"]
    assert set(bars.loc[bars["status"] == "error", "paint"]) == {"failed"}, "failed spans are drawn red"

    loops = page(make_app(db=filled_db.path), "loops")
    (by_tool, _), (over_time, _) = charts(loops)
    assert _color_scale(by_tool, "kind") == _color_scale(over_time, "kind")
    assert _color_scale(by_tool, "kind")["exact"] == colors.LOOP_KIND["exact"]


def test_time_axes_are_utc_fitted_to_the_data_and_counts_are_whole(filled_db, make_app) -> None:
    app = make_app(db=filled_db.path)
    app.run()
    ((spec, (data,)),) = charts(app)
    x = json.loads(spec)["encoding"]["x"]
    assert x["scale"]["type"] == "utc" and x["title"] == "time (UTC)"
    assert "%I" not in x["axis"]["format"] and "%p" not in x["axis"]["format"], "24 h clock"
    start, end = (pd.Timestamp(t) for t in x["scale"]["domain"])
    assert end - start < pd.Timedelta(hours=2), "the runs of the last 30 minutes fill the axis, not a 24 h one"
    assert pd.to_datetime(data["bucket"]).min().tz_localize("UTC") >= start - pd.Timedelta(minutes=5)
    y = json.loads(spec)["encoding"]["y"]["axis"]
    assert y["tickMinStep"] == 1 and y["format"] == ",d"
    burn = page(make_app(db=filled_db.path), "burn")
    ((curve, _),) = charts(burn)
    assert json.loads(curve)["encoding"]["x"]["axis"]["tickMinStep"] == 1, "no half steps"


def test_compare_two_runs_of_one_agent(filled_db, make_app) -> None:
    emitted = filled_db.emitted
    loop = emitted.first("loop")
    app = page(make_app(db=filled_db.path, query={"a": loop}), "compare")
    assert_clean(app)
    good = app.query_params["b"]
    good = good[0] if isinstance(good, list) else good
    assert good in emitted.traces["success"], "B: a successful run of the looping run's agent"
    shown = texts(app)
    assert "They diverge at step 0" in shown
    assert "query_order(#" in shown and "search_orders(#" in shown
    table = tables(app)[-1]
    assert list(table["step"]) == [0, 1, 2, 3]
    assert table.loc[table["step"] == 3, "calls B"].iloc[0] == "(no step)"
    assert list(table["tokens A"]) == [1000 + 1400 * s + 50 for s in range(4)]
    assert len(charts(app)) == 1
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["steps"] in ("4", "3")

    same = page(make_app(db=filled_db.path, query={"a": loop, "b": emitted.traces["loop"][1]}), "compare")
    assert "The two runs made the same tool calls at every step" in texts(same)


def test_a_custom_utc_range_narrows_every_page(filled_db, make_app) -> None:
    runs = tables(page(make_app(db=filled_db.path, query={"range": "all"}), "runs"))[0]
    started = runs.sort_values("started_at")["started_at"]
    start = started.iloc[2].floor("min")
    end = start + timedelta(minutes=6)
    query = {"range": "custom", "from": start.strftime("%Y-%m-%dT%H:%MZ"), "to": end.strftime("%Y-%m-%dT%H:%MZ")}
    app = page(make_app(db=filled_db.path, query=query), "runs")
    assert_clean(app)
    inside = set(runs.loc[(runs["started_at"] >= start) & (runs["started_at"] < end), "trace_id"])
    assert set(tables(app)[0]["trace_id"]) == inside and 0 < len(inside) < len(runs)
    assert app.sidebar.date_input(key="f_from_date").value == start.date()
    assert filters.Filters("custom", start=start, end=end).label() in texts(app)
    assert app.query_params["from"] in (query["from"], [query["from"]])


def test_a_stuck_run_says_it_is_stuck(filled_db, make_app) -> None:
    app = make_app(db=filled_db.path, query={"run": filled_db.emitted.first("stuck")})
    app.run()
    assert_clean(app)
    (warning,) = [w.value for w in app.warning]
    assert warning.startswith("This run is stuck") and f"{STUCK_MINUTES_AGO}." in warning


def test_span_detail_shows_captured_messages_and_tool_input_output(ranking_db, make_app) -> None:
    app = make_app(db=ranking_db.path, query={"run": ranking_db.emitted.first("captured")})
    app.run()
    assert_clean(app)
    spans = app.selectbox(key=f"span_pick_{ranking_db.emitted.first('captured')}")
    spans.select_index(next(i for i, o in enumerate(spans.options) if "execute_tool" in o)).run()
    code = [c.value for c in app.code]
    assert any('"order_id": "E-5"' in c for c in code) and any('"status": "shipped"' in c for c in code)
    assert "Tool input" in texts(app) and "Tool output" in texts(app)
    picker = app.selectbox(key=spans.key)
    picker.select_index(next(i for i, o in enumerate(picker.options) if "chat" in o)).run()
    assert any("Where is E-5?" in c for c in (c.value for c in app.code)), "the model call's messages"


def test_a_custom_range_given_to_the_second_keeps_its_seconds_in_the_link(filled_db, make_app) -> None:
    """The link was rewritten to whole minutes: opened again, it showed another set of runs."""
    runs = tables(page(make_app(db=filled_db.path, query={"range": "all"}), "runs"))[0]
    started = runs.sort_values("started_at")["started_at"]
    start, end = started.iloc[2] - timedelta(seconds=1), started.iloc[2] + timedelta(seconds=1)
    query = {"range": "custom", "from": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "to": end.strftime("%Y-%m-%dT%H:%M:%SZ")}
    first = page(make_app(db=filled_db.path, query=query), "runs")
    assert_clean(first)
    shown = set(tables(first)[0]["trace_id"])
    link = {k: first.query_params[k] for k in ("range", "from", "to")}
    link = {k: v[0] if isinstance(v, list) else v for k, v in link.items()}
    assert link == query
    again = page(make_app(db=filled_db.path, query=link), "runs")
    assert set(tables(again)[0]["trace_id"]) == shown and 0 < len(shown) < len(runs)
