"""The Sessions and Budgets pages through AppTest on DuckDB files with known traffic."""

from __future__ import annotations

import json

from dashboard_helpers import assert_clean, charts, page, tables, texts
from dashboard_traffic import SESSION_ID

from loopsight import format as fmt
from loopsight.dashboard.data import DuckDBSource


def test_sessions_list_and_one_sessions_runs_with_its_cross_run_loop(extras_db, make_app) -> None:
    app = page(make_app(db=extras_db.path), "sessions")
    assert_clean(app)
    (listed,) = tables(app)
    row = listed.set_index("session_id").loc[SESSION_ID]
    assert (row["runs"], row["loops"]) == (3, 1)
    (stored,) = [x for x in DuckDBSource(extras_db.path).sessions() if x["session_id"] == SESSION_ID]
    assert row["cost"] == fmt.money(stored["cost_usd"], stored["unpriced_calls"], precise=True) != "—", "priced beside"
    opened = page(make_app(db=extras_db.path, query={"session": SESSION_ID}), "sessions")
    assert_clean(opened)
    _sessions, runs, loops = tables(opened)
    turns = extras_db.emitted.traces["session_turn"]
    assert set(runs["trace_id"]) == set(turns)
    assert list(runs["started_at"]) == sorted(runs["started_at"]), "in the conversation's order"
    assert list(loops["scope"]) == ["session"] and list(loops["kind"]) == ["exact"]
    assert list(loops["trace_id"]) == [turns[-1]], "on the run of its last call"
    assert "span several runs of this session" in texts(opened)
    assert "Its runs, whatever the sidebar's filters" in texts(opened)  # the window or agent does not narrow it
    assert {m.label: m.value for m in opened.metric}["runs"] == "3"


def test_session_loop_is_on_the_loops_page_and_the_run_links_its_session(extras_db, make_app) -> None:
    (loops,) = tables(page(make_app(db=extras_db.path), "loops"))
    across = loops[loops["scope"] == "session"]
    assert list(across["trace_id"]) == [extras_db.emitted.traces["session_turn"][-1]]
    run = make_app(db=extras_db.path, query={"run": extras_db.emitted.first("session_turn")})
    run.run()
    assert_clean(run)
    (link,) = [p for p in run.get("page_link") if "Session" in p.label]
    assert link.label == f"Session `{SESSION_ID}`", "a producer's value, shown verbatim: never markdown"


def test_sessions_page_without_session_ids_says_where_they_come_from(filled_db, make_app) -> None:
    app = page(make_app(db=filled_db.path), "sessions")
    assert_clean(app)
    assert "No run in this window carries a session id" in texts(app)


def test_budgets_page_recommends_shows_curves_distribution_and_cut_runs(budget_db, make_app) -> None:
    app = page(make_app(db=budget_db.path), "budgets")
    assert_clean(app)
    advice = DuckDBSource(budget_db.path).budgets()["agents"][0]
    by_kind = {b["kind"]: b for b in advice["budgets"]}
    assert by_kind["steps"]["recommended"] == 3, "the successes take 3 steps, the loops 4"
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["max_steps"] == "3", "the reference loop's field names the tile"
    assert "configured: 8" in texts(app)
    assert "ReactConfig(max_steps=3" in texts(app)
    drawn = charts(app)
    assert len(drawn) == 4, "one curve per budget kind"
    spec, (curve, *_rest) = drawn[0]
    assert set(curve["measure"]) == {"successful runs cut", "bad runs cut", "bad runs' tokens saved"}
    assert any(layer.get("mark", {}).get("type") == "rule" for layer in json.loads(spec).get("layer", []))
    distribution = tables(app)[0]
    steps = distribution[distribution["budget"] == "model turns"].set_index("outcome")
    assert (steps.loc["ok", "runs"], steps.loc["ok", "max"], steps.loc["looped", "max"]) == (21, "3", "4")
    cut = tables(app)[-1]
    assert set(cut["trace_id"]) <= set(budget_db.emitted.traces["loop"]) and len(cut) == 21
    assert set(cut["outcome"]) == {"looped"}
    app.selectbox(key="budget_value_steps").set_value(1).run()
    assert_clean(app)
    cut = tables(app)[-1]
    assert {"ok", "looped"} == set(cut["outcome"]), "a budget of one step cuts the successes too"
    assert app.query_params.get("value") in ("1", ["1"]), "the page's own pickers are in the link"
    app.selectbox(key="budget_kind").set_value("tool_calls").run()
    assert app.query_params.get("budget") in ("tool_calls", ["tool_calls"]) and "value" not in app.query_params
    linked = page(make_app(db=budget_db.path, query={"budget": "steps", "value": "1"}), "budgets")
    assert_clean(linked)
    assert (
        linked.selectbox(key="budget_kind").value == "steps" and linked.selectbox(key="budget_value_steps").value == 1
    )
    assert set(tables(linked)[-1]["outcome"]) == {"ok", "looped"}, "a link opens the same view"


def test_budgets_page_without_enough_successes_gives_the_reason(filled_db, make_app) -> None:
    app = page(make_app(db=filled_db.path, query={"agent": "order-assistant"}), "budgets")
    assert_clean(app)
    assert "fewer than 20 successful runs in the window" in texts(app)
    assert {m.label: m.value for m in app.metric}["max_steps"] == "—"
