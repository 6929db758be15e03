"""Money on every page that shows tokens, through AppTest on DuckDB files priced by the real price book:
the overview's cost tiles, the runs table, the run page (per step), Token burn (cost per success, cache hit
ratio, what the cache saved), Loops (money lost to loops), Tools; unpriced is a dash or "unpriced", never $0."""

from __future__ import annotations

import pytest
from dashboard_helpers import assert_clean, page, tables, texts

from loopsight.dashboard import colors, ui
from loopsight.dashboard import format as fmt
from loopsight.dashboard.data import DuckDBSource


def _source(db) -> DuckDBSource:
    return DuckDBSource(db.path)


def test_overview_tiles_show_the_windows_cost(filled_db, make_app) -> None:
    app = make_app(db=filled_db.path, query={"range": "all"})
    app.run()
    assert_clean(app)
    tiles = {m.label: m.value for m in app.metric}
    answer = _source(filled_db).overview(since=ui.ALL_TIME)["tiles"]
    assert answer["cost_usd"]["value"] > 0
    assert tiles["Cost"] == fmt.usd(answer["cost_usd"]["value"], precise=True)
    assert tiles["Cost per success"] == fmt.usd(answer["cost_per_success_usd"]["value"], precise=True)
    top_tokens = tables(app)[0]
    assert "cost" in top_tokens.columns and all(c.startswith("$") for c in top_tokens["cost"])


def test_runs_table_has_each_runs_cost_and_unpriced_is_not_zero(extras_db, make_app) -> None:
    app = page(make_app(db=extras_db.path), "runs")
    assert_clean(app)
    table = tables(app)[0].set_index("trace_id")
    by_trace = {r["trace_id"]: r for r in _source(extras_db).runs(limit=100)}
    for trace, row in table.iterrows():
        expected = by_trace[trace]["cost_usd"]
        assert row["cost"] == (fmt.usd(expected, precise=True) if expected is not None else "unpriced"), trace
    unpriced = set(extras_db.emitted.traces["unpriced"])
    assert set(table.loc[list(unpriced), "cost"]) == {"unpriced"}, "a run on an unpriced model is not $0"
    assert all(c.startswith("$") for c in table.loc[list(set(table.index) - unpriced), "cost"])


def test_run_page_shows_the_cost_and_the_cost_of_each_step(filled_db, make_app) -> None:
    trace = filled_db.emitted.first("loop")
    app = make_app(db=filled_db.path, query={"run": trace})
    app.run()
    assert_clean(app)
    detail = _source(filled_db).run(trace)
    run = detail["runs"][0]
    assert {m.label: m.value for m in app.metric}["cost"] == fmt.usd(run["cost_usd"], precise=True)
    (steps,) = [t for t in tables(app) if "cost" in t.columns and "step" in t.columns]
    assert list(steps["cost"]) == [fmt.usd(s["cost_usd"], precise=True) for s in detail["steps"]]
    assert sum(s["cost_usd"] for s in detail["steps"]) == pytest.approx(run["cost_usd"])
    chat = next(s for s in detail["spans"] if s["kind"] == "llm")
    app.selectbox(key=f"span_pick_{trace}").set_value(chat["span_id"]).run()
    assert f"cost {fmt.usd(chat['cost_usd'], precise=True)}" in texts(app), "a model call's facts name its cost"


def test_run_page_says_how_to_capture_arguments_when_none_were(extras_db, make_app) -> None:
    trace = extras_db.emitted.first("no_arguments")
    app = make_app(db=extras_db.path, query={"run": trace})
    app.run()
    assert_clean(app)
    hint = _source(extras_db).run(trace)["runs"][0]["arguments_hint"]
    shown = texts(app)
    assert "carry no arguments" in shown
    assert hint and hint in shown
    other = make_app(db=extras_db.path, query={"run": extras_db.emitted.first("success")})
    other.run()
    assert "carry no arguments" not in texts(other)


def test_burn_page_money_per_agent_and_per_run(extras_db, make_app) -> None:
    app = page(make_app(db=extras_db.path), "burn")
    assert_clean(app)
    agents, top = tables(app)
    answer = {a["agent"]: a for a in _source(extras_db).burn(limit=50)["agents"]}
    for _, row in agents.iterrows():
        expected = answer[row["agent"]]
        assert row["cost_per_success_usd"] == fmt.usd(expected["cost_per_success_usd"], precise=True) or (
            expected["cost_per_success_usd"] is None and row["cost_per_success_usd"] == "unpriced"
        )
        assert row["cache_hit_ratio"] == fmt.pct(expected["cache_hit_ratio"])
        assert row["cache_saved_usd"] in (fmt.usd(expected["cache_saved_usd"], precise=True), "unpriced")
    local = agents.set_index("agent").loc["local-bot"]
    assert local["cost_usd"] == "unpriced" and local["cost_per_success_usd"] == "unpriced"
    assert "model calls have no price" in texts(app)
    assert {"cost", "wasted_cost"} <= set(top.columns)
    loop_rows = top[top["trace_id"].isin(extras_db.emitted.traces["loop"])]
    assert all(c.startswith("$") and c != "$0.00" for c in loop_rows["wasted_cost"])


def test_loops_page_money_lost_to_loops_counts_each_run_once(looping_db, make_app) -> None:
    app = page(make_app(db=looping_db.path), "loops")
    assert_clean(app)
    metrics = {m.label: m.value for m in app.metric}
    runs = _source(looping_db).burn(limit=100)["runs"]
    lost = sum(r["wasted_cost_usd"] or 0 for r in runs)
    assert lost > 0
    assert metrics["Money lost to loops"] == fmt.usd(lost, precise=True)
    (loops,) = tables(app)
    assert all(c.startswith("$") for c in loops["wasted_cost"])


def test_tools_page_cost_of_the_turns_after_failures(filled_db, make_app) -> None:
    app = page(make_app(db=filled_db.path), "tools")
    assert_clean(app)
    (table,) = tables(app)
    refund = table[table["tool"] == "refund_order"].iloc[0]
    expected = {t["tool"]: t for t in _source(filled_db).tools()}["refund_order"]["cost_after_failures_usd"]
    assert refund["after_failures"] == fmt.usd(expected, precise=True)


def test_every_kind_and_reason_of_the_vocabulary_has_its_own_fixed_colour() -> None:
    from loopsight.analytics.stalls import STALL_KINDS
    from loopsight.attributes import ERROR_CLASSES, LOOP_KINDS, TERMINATION_REASONS

    for meaning, values in (
        ("loop_kind", LOOP_KINDS),
        ("stall_kind", STALL_KINDS),
        ("termination_reason", TERMINATION_REASONS),
        ("error_class", ERROR_CLASSES),
        ("loop_scope", ("run", "session")),
        ("budget_outcome", ("ok", "looped", "budget", "failed", "other")),
    ):
        scale = colors.SCALES[meaning]
        assert set(values) <= set(scale), (meaning, set(values) - set(scale))
        shades = [scale[v] for v in values]
        assert len(set(shades)) == len(shades), f"{meaning}: two values share a colour"
