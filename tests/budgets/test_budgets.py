"""The budget advisor on runs whose answers are worked out by hand (budget_world.py)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest
from budget_world import BAD_TOKENS, tokens

from loopsight import analytics
from loopsight.analytics.budgets import KINDS, MAX_OK_CUT, MIN_OK_RUNS, REACT_FIELDS, budget_replay, budgets, recommend


def agent(answer: dict[str, Any], name: str, service: str | None = None) -> dict[str, Any]:
    (found,) = [a for a in answer["agents"] if a["agent"] == name and a.get("service") == service]
    return found


def kind(entry: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [b for b in entry["budgets"] if b["kind"] == name]
    return found


def at(budget: dict[str, Any], value: float) -> dict[str, Any]:
    (found,) = [p for p in budget["curve"] if p["value"] == value]
    return found


def cut(point: dict[str, Any]) -> tuple[int, int, int, int]:
    return point["ok_runs_cut"], point["bad_runs_cut"], point["looped_runs_cut"], point["tokens_saved"]


def saved(*steps: int) -> int:
    return sum(tokens(k) for k in steps)


def test_runs_are_counted_by_outcome(con: Any) -> None:
    planner = agent(budgets(con), "planner")
    assert {k: planner[k] for k in ("runs", "ok_runs", "bad_runs", "looped_runs", "budget_runs", "failed_runs")} == {
        "runs": 25,
        "ok_runs": 20,
        "bad_runs": 4,
        "looped_runs": 2,
        "budget_runs": 1,
        "failed_runs": 1,
    }
    assert (planner["other_runs"], planner["bad_tokens"], planner["reference_loop"]) == (1, BAD_TOKENS, False)
    # money at $1 per million tokens: what the bad runs cost, and the run cost per outcome (tokens / 10^6)
    assert planner["bad_cost_usd"] == pytest.approx(BAD_TOKENS / 1e6, abs=1e-9)
    costs = planner["cost_distribution"]
    assert costs["looped"]["runs"] == 2 and costs["looped"]["max"] == pytest.approx(3680 / 1e6, abs=1e-9)
    assert costs["ok"]["p50"] == pytest.approx(
        (320 + 630) / 2 / 1e6, abs=1e-9
    )  # 10 ok runs of 320 tokens, 9 of 630, 1 of 1550
    assert [b["kind"] for b in planner["budgets"]] == list(KINDS)


def test_steps_replay(con: Any) -> None:
    steps = kind(agent(budgets(con), "planner"), "steps")
    # max_steps 5: no ok run cut; the loops (8 steps) lose steps 6-8, the budget run (6) step 6;
    # the failed run (4 steps) runs whole
    assert cut(at(steps, 5)) == (0, 3, 2, 2 * saved(6, 7, 8) + saved(6))
    assert at(steps, 5)["looped_steps_avoided"] == 3
    # max_steps 3: the 5-step ok run is cut too; the failed run loses step 4
    assert cut(at(steps, 3)) == (1, 4, 2, 2 * saved(4, 5, 6, 7, 8) + saved(4, 5, 6) + saved(4))
    assert cut(at(steps, 2)) == (10, 4, 2, 2 * saved(3, 4, 5, 6, 7, 8) + saved(3, 4, 5, 6) + saved(3, 4))
    assert cut(at(steps, 1)) == (20, 4, 2, 2 * saved(2, 3, 4, 5, 6, 7, 8) + saved(2, 3, 4, 5, 6) + saved(2, 3, 4))
    assert cut(at(steps, 8)) == (0, 0, 0, 0)
    assert [p["value"] for p in steps["curve"]] == [1, 2, 3, 4, 5, 6, 7, 8]  # the values where something changes
    # 1 % of 20 ok runs is 0.2: the smallest value cutting none
    assert (steps["recommended"], steps["reason"], steps["react_field"]) == (5, None, "max_steps")
    assert at(steps, 5)["tokens_saved_share"] == round((2 * saved(6, 7, 8) + saved(6)) / BAD_TOKENS, 4)
    # "3 steps earlier", as docs/budgets.md and the CLI's table write it, not "3.0"
    assert steps["summary"].startswith("at most 5 model turns per run: 100 % of looping runs stopped 3 steps earlier")
    assert steps["at_recommended"] == at(steps, 5)
    assert steps["distribution"]["ok"] == {"runs": 20, "p50": 2.5, "p90": 3.0, "p99": pytest.approx(4.62), "max": 5}
    assert steps["distribution"]["looped"] == {"runs": 2, "p50": 8.0, "p90": 8.0, "p99": 8.0, "max": 8}
    assert steps["distribution"]["other"]["runs"] == 1


def test_tool_calls_replay(con: Any) -> None:
    calls = kind(agent(budgets(con), "planner"), "tool_calls")
    # max_tool_calls 4: a run calling a tool every step crosses it at step 5 (its fifth call is
    # refused, the run ends there): steps 6.. are saved. The failed run made exactly 4 calls.
    assert cut(at(calls, 4)) == (0, 3, 2, 2 * saved(6, 7, 8) + saved(6))
    assert cut(at(calls, 2)) == (1, 4, 2, 2 * saved(4, 5, 6, 7, 8) + saved(4, 5, 6) + saved(4))
    assert (calls["recommended"], calls["react_field"]) == (4, "max_tool_calls")


def test_seconds_replay(con: Any) -> None:
    seconds = kind(agent(budgets(con), "planner"), "seconds")
    # ok runs last 21, 36 and 66 ms: 66 ms is on the grid value 80 ms (60 < 66 <= 80)
    assert seconds["recommended"] == 0.08 and seconds["react_field"] == "max_seconds"
    # 80 ms: the loops (121 ms) lose the steps starting at 90 and 105 ms (7, 8); the budget run
    # (91 ms) is cut during its last step, which starts at 75 ms: nothing saved; the failed one (61) runs
    assert cut(at(seconds, 0.08)) == (0, 3, 2, 2 * saved(7, 8))
    assert at(seconds, 0.08)["looped_steps_avoided"] == 2
    # 60 ms: the 66 ms ok run is cut during its last step (it starts at 60 ms: not after 60)
    assert cut(at(seconds, 0.06)) == (1, 4, 2, 2 * saved(6, 7, 8) + saved(6) + 0)
    assert 0.025 in [p["value"] for p in seconds["curve"]] and 0.04 in [p["value"] for p in seconds["curve"]]


def test_tokens_replay(con: Any) -> None:
    budget = kind(agent(budgets(con), "planner"), "tokens")
    # ok runs spend at most 1550 tokens: grid value 2000; a step runs unless the tokens spent before
    # it exceed the budget: the loops' steps 7 (2160 before) and 8 (2870) are saved
    assert (budget["recommended"], budget["react_field"]) == (2000, "max_tokens")
    assert cut(at(budget, 2000)) == (0, 3, 2, 2 * saved(7, 8))
    # 800 (the curve's value below 1040: grid values hold no figure between 630 and 1040 but 800):
    # the failed run (1040) crosses it in its last step; the 1550 ok run loses step 5 (1040 before)
    assert [p["value"] for p in budget["curve"]][:5] == [120, 400, 800, 1200, 2000]
    assert cut(at(budget, 800)) == (1, 4, 2, 2 * saved(5, 6, 7, 8) + saved(5, 6))


def test_too_few_successful_runs_give_no_recommendation_but_a_curve(con: Any) -> None:
    tiny = agent(budgets(con), "tiny")
    assert (tiny["runs"], tiny["ok_runs"], tiny["bad_runs"]) == (3, 3, 0)
    for budget in tiny["budgets"]:
        assert budget["recommended"] is None and budget["at_recommended"] is None
        assert budget["reason"] == f"fewer than {MIN_OK_RUNS} successful runs in the window (3)"
        assert budget["curve"]
    assert [cut(p) for p in kind(tiny, "steps")["curve"]] == [(3, 0, 0, 0), (0, 0, 0, 0)]
    assert kind(tiny, "steps")["curve"][0]["tokens_saved_share"] is None  # no bad runs: no share
    assert recommend(kind(tiny, "steps")["curve"], 3, min_ok_runs=3) == (2, None)


def test_filters_and_groups(con: Any, budget_world: Any) -> None:
    only = budgets(con, agent="tiny")
    assert [a["agent"] for a in only["agents"]] == ["tiny"]
    assert budgets(con, agent="nobody") == {"agents": []}
    by_service = budgets(con, by_service=True)
    assert [(a["agent"], a["service"], a["runs"]) for a in by_service["agents"]] == [
        ("planner", "svc-a", 24),
        ("planner", "svc-b", 1),
        ("tiny", "svc-a", 3),
    ]
    assert agent(budgets(con, service="svc-b"), "planner")["runs"] == 1
    first = budget_world.runs["ok2"][0]
    later = budgets(con, since=_start(con, budget_world.runs["ok3"][0]))
    assert agent(later, "planner")["runs"] == 25 - 10 and first


def _start(con: Any, info: Any) -> Any:
    return con.execute("SELECT started_at FROM run_facts WHERE run_id = $r", {"r": info.run_id}).fetchone()[0]


def test_the_recommendation_is_the_smallest_value_within_the_tolerance() -> None:
    curve = [{"value": v, "ok_runs_cut": c} for v, c in [(3, 50), (5, 2), (6, 1), (8, 0)]]
    assert MAX_OK_CUT == 0.01
    assert recommend(curve, 200) == (5, None)  # 2 <= 1 % of 200
    assert recommend(curve, 199) == (6, None)
    assert recommend(curve, 100) == (6, None)
    assert recommend(curve, 99) == (8, None)
    assert recommend(curve, 100, max_ok_cut=0.0) == (8, None)


def test_replay_of_one_budget_run_by_run(con: Any, budget_world: Any) -> None:
    runs = budget_replay(con, kind="steps", value=5, agent="planner")
    assert [(r["outcome"], r["total"], r["steps_kept"], r["last_step"], r["tokens_saved"]) for r in runs] == [
        ("looped", 8, 5, 4, saved(6, 7, 8)),
        ("looped", 8, 5, 4, saved(6, 7, 8)),
        ("budget", 6, 5, 4, saved(6)),
    ]
    assert {r["run_id"] for r in runs[:2]} == {i.run_id for i in budget_world.runs["looped"]}
    assert runs[0]["loop_first_step"] == 0 and runs[2]["loop_first_step"] is None
    assert all(r["cut"] for r in runs)
    assert [r["cost_saved_usd"] for r in runs] == pytest.approx([r["tokens_saved"] / 1e6 for r in runs], abs=1e-9)
    everything = budget_replay(con, kind="steps", value=5, agent="planner", only_cut=False, limit=1000)
    assert len(everything) == 25 and not any(r["cut"] for r in everything[3:])
    assert sum(r["tokens_saved"] for r in everything) == cut(at(kind(agent(budgets(con), "planner"), "steps"), 5))[3]
    # seconds are seconds; a run cut in its last step saves nothing but is cut
    timed = budget_replay(con, kind="seconds", value=0.08, agent="planner")
    assert [(r["outcome"], r["steps_kept"], r["tokens_saved"]) for r in timed] == [
        ("looped", 6, saved(7, 8)),
        ("looped", 6, saved(7, 8)),
        ("budget", 6, 0),
    ]
    assert timed[0]["total"] == pytest.approx(0.121)
    with pytest.raises(ValueError):
        budget_replay(con, kind="turns", value=1)


@pytest.mark.parametrize("name", KINDS)
def test_every_point_of_every_curve_equals_its_run_by_run_replay(con: Any, name: str) -> None:
    """The curve's bucket sums (budgets_curve.sql) and the direct replay (budgets_replay.sql) agree."""
    for entry in budgets(con)["agents"]:
        for point in kind(entry, name)["curve"]:
            runs = budget_replay(con, kind=name, value=point["value"], agent=entry["agent"], only_cut=False, limit=1000)
            bad = [r for r in runs if r["outcome"] in ("looped", "budget", "failed")]
            assert point["ok_runs_cut"] == sum(r["cut"] for r in runs if r["outcome"] == "ok")
            assert point["bad_runs_cut"] == sum(r["cut"] for r in bad)
            assert point["tokens_saved"] == sum(r["tokens_saved"] for r in bad)
            # money: the fixture's model costs $1 per million tokens, so what is saved is tokens / 10^6
            assert point["cost_saved_usd"] == pytest.approx(point["tokens_saved"] / 1e6, abs=1e-9)
            assert point["cost_saved_usd"] == pytest.approx(sum(r["cost_saved_usd"] for r in bad), abs=1e-9)


def test_the_react_fields_are_react_config_fields() -> None:
    from loopsight.react import ReactConfig

    fields = {f.name for f in dataclasses.fields(ReactConfig)}
    assert set(REACT_FIELDS.values()) <= fields


def test_the_package_exports_the_questions() -> None:
    assert analytics.budgets is budgets and analytics.budget_replay is budget_replay


def test_runs_that_record_no_tokens_say_so_instead_of_a_cut(tmp_path: Any) -> None:
    """25 good runs whose model spans carry no token counts: the tokens budget said "no value cuts
    few enough successful runs" (no value cuts any: there is no figure), and an agent with no bad
    run had a null bad cost where burn says 0."""
    from analytics_fixture import T0, Recorder, Step

    from loopsight.stores.duckdb_store import Store

    store = Store.open(str(tmp_path / "quiet.duckdb"))
    recorder = Recorder()
    for i in range(25):
        recorder.run(agent="quiet", start=T0 + timedelta(minutes=i), steps=[Step(None, None), Step(None, None)])
    recorder.ingest(store)
    con = store.reader()
    try:
        (entry,) = budgets(con)["agents"]
    finally:
        con.close()
        store.close()
    assert entry["ok_runs"] == 25 and entry["bad_runs"] == 0 and entry["bad_cost_usd"] == 0.0
    tokens = kind(entry, "tokens")
    assert (tokens["recommended"], tokens["reason"], tokens["curve"]) == (
        None,
        "no run in the window records this figure",
        [],
    )
    assert kind(entry, "steps")["recommended"] == 2


def test_a_figure_no_run_records_says_so_before_counting_runs(tmp_path: Any) -> None:
    """With fewer than 20 good runs the reason was "fewer than 20 successful runs" even for a
    figure no run records (its curve empty): more runs would not give it one."""
    from analytics_fixture import T0, Recorder, Step

    from loopsight.stores.duckdb_store import Store

    store = Store.open(str(tmp_path / "few.duckdb"))
    recorder = Recorder()
    for i in range(3):
        recorder.run(agent="few", start=T0 + timedelta(minutes=i), steps=[Step(None, None), Step(None, None)])
    recorder.ingest(store)
    con = store.reader()
    try:
        (entry,) = budgets(con)["agents"]
    finally:
        con.close()
        store.close()
    tokens, steps = kind(entry, "tokens"), kind(entry, "steps")
    assert (tokens["reason"], tokens["curve"]) == ("no run in the window records this figure", [])
    assert steps["curve"] and steps["reason"] == "fewer than 20 successful runs in the window (3)"
