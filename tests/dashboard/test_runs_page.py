"""The Runs and Run timeline pages against a real collector (OTLP/HTTP in, query API out)
and against a DuckDB file read directly."""

from __future__ import annotations

import json
import re

import pandas as pd
from dashboard_helpers import assert_clean, charts, page, tables, texts
from dashboard_traffic import HOSTILE_AGENT, emit_to_collector
from ports import free_port

from loopsight import format as fmt
from loopsight.dashboard import ui
from loopsight.dashboard.data import DuckDBSource


def _traces(app) -> list[str]:
    """The trace ids the Runs table lists (a click on a row opens that run)."""
    return list(tables(app)[0]["trace_id"])


def test_empty_then_filled_collector_with_token(start_collector, make_app) -> None:
    collector = start_collector(token="s3cret")
    empty = page(make_app(collector=collector.url, token="s3cret"), "runs")
    assert not empty.exception
    shown = texts(empty)
    assert "No agent runs received yet" in shown
    assert f'loopsight.configure(endpoint="{collector.url}"' in shown
    assert f"OTEL_EXPORTER_OTLP_ENDPOINT={collector.url}" in shown

    emitted = emit_to_collector(collector.url, token="s3cret", rounds=1)
    without_token = page(make_app(collector=collector.url), "runs")
    assert "Cannot read collector" in texts(without_token) and "wants a bearer token" in texts(without_token)
    assert "--token" in texts(without_token)

    app = page(make_app(collector=collector.url, token="s3cret"), "runs")
    assert_clean(app)
    assert sorted(_traces(app)) == sorted(emitted.run_traces)
    assert charts(app), "runs over time chart"
    table = tables(app)[0]
    loop_row = table[table["trace_id"] == emitted.first("loop")].iloc[0]
    assert (loop_row["agent"], loop_row["status"], loop_row["termination_reason"]) == (
        "order-assistant",
        "error",
        "loop_detected",
    )
    assert loop_row["steps"] == 4 and loop_row["tokens"] == sum(1000 + 1400 * s + 50 for s in range(4))

    app.selectbox(key="runs_reason").select("loop_detected").run()
    assert _traces(app) == [emitted.first("loop")]
    app.selectbox(key="runs_reason").select("any").run()
    app.selectbox(key="runs_status").select("ok").run()
    assert sorted(_traces(app)) == sorted([emitted.first("success"), emitted.first("retried_timeout")])
    assert "2 runs (last 24 hours, status ok)" in texts(app), "the caption names the page's own filters too"

    timeline = make_app(collector=collector.url, token="s3cret", query={"run": emitted.first("retried_timeout")})
    timeline.run()
    assert_clean(timeline)
    assert [t.value for t in timeline.title] == ["Run timeline"]
    shown = texts(timeline)
    assert "termination=completed" in shown and "web-researcher" in shown
    assert len(charts(timeline)) == 2, "waterfall and tokens per step"
    spec, (bars, markers) = charts(timeline)[0]
    assert '"start_ms"' in spec and '"at_ms"' in spec
    assert list(bars["row"].str[4:]) == [
        "invoke_agent web-researcher",
        "· chat gpt-4o",
        "· execute_tool fetch_page",
        "· chat gpt-4o",
    ]
    assert list(markers["marker"]) == ["retry", "retry"]
    assert list(bars["start_ms"]) == sorted(bars["start_ms"]) and bars["start_ms"].iloc[0] == 0

    # the collector holds its file: reading it directly fails with a pointer to --collector
    locked = page(make_app(db=collector.db_path), "runs")
    assert "held by a running collector" in texts(locked) or "lock" in texts(locked).lower()


def test_unreachable_collector_names_the_url_tried(make_app) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    app = make_app(collector=url)
    app.run()
    assert not app.exception
    assert "Cannot read collector" in texts(app)
    assert f"cannot reach the collector at {url}" in texts(app)
    assert f"loopsight dashboard --collector {url}" in texts(app)


def test_runs_page_reads_a_duckdb_file(filled_db, make_app) -> None:
    app = page(make_app(db=filled_db.path), "runs")
    assert_clean(app)
    assert len(_traces(app)) == filled_db.emitted.count
    table = tables(app)[0]
    assert set(table["agent"]) == {"order-assistant", "web-researcher", "refund-bot", HOSTILE_AGENT}
    app.number_input(key="runs_min_tokens").set_value(8000).run()
    assert sorted(_traces(app)) == sorted(filled_db.emitted.traces["loop"])


def test_deep_link_opens_the_timeline_from_the_root_url(filled_db, make_app) -> None:
    trace = filled_db.emitted.first("fatal")
    app = make_app(db=filled_db.path, query={"run": trace})
    app.run()
    assert_clean(app)
    assert "termination=fatal_error" in texts(app)
    (_, (_bars, markers)), (_, (tokens,)) = charts(app)
    assert set(markers["marker"]) == {"error"} and len(markers) == 2, "the failed tool call and the failed run"
    assert "permission_denied" in set(markers["detail"].str.split(" / ").str[0])
    assert tokens.to_dict("records") == [
        {"step": 0, "direction": "input", "tokens": 800},
        {"step": 0, "direction": "output", "tokens": 40},
    ]
    detail = tables(app)[-1]
    assert "permission_denied" in set(detail["value"]), "the failing span is preselected in the detail panel"


def test_bad_and_unknown_run_ids_explain_themselves(filled_db, make_app) -> None:
    bad = make_app(db=filled_db.path, query={"run": "not-a-trace"})
    bad.run()
    assert "is not a trace id" in texts(bad) and not bad.exception
    unknown = make_app(db=filled_db.path, query={"run": "0" * 32})
    unknown.run()
    assert "No spans stored for trace" in texts(unknown) and not unknown.exception


def test_unknown_run_id_through_the_collector_says_no_spans(start_collector, make_app) -> None:
    collector = start_collector()
    unknown = make_app(collector=collector.url, query={"run": "0" * 32})
    unknown.run()
    assert "No spans stored for trace" in texts(unknown) and not unknown.exception


def test_span_detail_opens_on_the_span_the_loop_guard_flagged(filled_db, make_app) -> None:
    app = make_app(db=filled_db.path, query={"run": filled_db.emitted.first("loop")})
    app.run()
    assert_clean(app)
    detail = dict(tables(app)[-1].values)
    assert detail["name"] == "execute_tool query_order" and detail["step"] == "3"
    assert detail["attribute loopsight.loop.kind"] == "exact"


def test_an_open_run_switches_to_another_picked_filtered_or_pasted(filled_db, make_app) -> None:
    emitted = filled_db.emitted
    app = make_app(db=filled_db.path, query={"run": emitted.first("fatal")})
    app.run()
    assert_clean(app)
    picker = app.selectbox(key="run_pick")
    assert len(picker.options) == 1 + emitted.count, "every run of the window"
    assert all(t in " ".join(picker.options) for t in emitted.run_traces), "labels carry the trace id (type to search)"

    app.selectbox(key="pick_status").select("ok").run()
    ok_runs = set(emitted.traces["success"]) | set(emitted.traces["retried_timeout"])
    assert {o.rsplit(" · ", 1)[-1] for o in app.selectbox(key="run_pick").options[1:]} == ok_runs
    app.selectbox(key="run_pick").set_value(emitted.first("retried_timeout")).run()
    assert_clean(app)
    assert app.query_params["run"] in (emitted.first("retried_timeout"), [emitted.first("retried_timeout")])
    assert "termination=completed" in texts(app) and "web-researcher" in texts(app)
    assert app.selectbox(key="run_pick").value is None, "the picker is ready for the next run"

    app.text_input(key="run_trace_id").input(f"  {emitted.first('loop').upper()} ").run()
    assert_clean(app)
    assert "termination=loop_detected" in texts(app)
    app.text_input(key="run_trace_id").input("abc").run()
    assert "is not a trace id" in texts(app) and "termination=loop_detected" in texts(app)


def test_span_picker_tells_repeated_calls_apart(filled_db, make_app) -> None:
    app = make_app(db=filled_db.path, query={"run": filled_db.emitted.first("loop")})
    app.run()
    options = app.selectbox(key=f"span_pick_{filled_db.emitted.first('loop')}").options
    calls = [o for o in options if "execute_tool query_order" in o]
    assert len(calls) == 4 and len(set(options)) == len(options), options
    assert [("step 0" in c, "step 3" in c) for c in (calls[0], calls[-1])] == [(True, False), (False, True)]
    assert all(re.search(r"\+[\d.,]+ (ms|s)\b", o) for o in options), "each option gives its start offset"


def test_runs_hidden_by_the_page_filters_name_those_filters(filled_db, make_app) -> None:
    app = page(make_app(db=filled_db.path, query={"range": "all"}), "runs")
    app.selectbox(key="runs_tool").select("refund_order").run()
    app.number_input(key="runs_min_tokens").set_value(8000).run()
    assert_clean(app)
    assert not app.dataframe
    (shown,) = [i.value for i in app.info]
    assert shown.startswith("No runs match these filters: used tool `refund_order`, at least 8,000 tokens."), shown
    assert "agent" not in shown and "service" not in shown and "time range" not in shown


def test_runs_chart_of_a_few_runs_has_whole_run_ticks_and_narrow_bars(filled_db, make_app) -> None:
    app = page(make_app(db=filled_db.path), "runs")
    app.selectbox(key="runs_reason").select("loop_detected").run()
    assert_clean(app)
    assert len(tables(app)[0]) == 2
    ((spec, (data,)),) = charts(app)
    spec = json.loads(spec)
    y, x = spec["encoding"]["y"], spec["encoding"]["x"]
    assert y["axis"]["tickMinStep"] == 1 and y["axis"]["format"] == ",d", "no 0.5 runs"
    assert data["runs"].sum() == 2
    domain = [pd.Timestamp(t) for t in x["scale"]["domain"]]
    widest = (pd.to_datetime(data["bucket_end"]) - pd.to_datetime(data["bucket"])).max()
    assert widest <= (domain[1] - domain[0]) / 20, "a bar is one bucket of the filtered window, not the whole width"


def test_a_stale_page_link_or_a_huge_number_in_it_falls_back_instead_of_failing(filled_db, make_app) -> None:
    """page=9 of fewer runs showed StreamlitInvalidLayoutContextError; min_tokens=10**23 the API's 400."""
    app = make_app(db=filled_db.path, query={"page": "9"})
    app.run()
    page(app, "runs")
    assert_clean(app)
    assert len(_traces(app)) == filled_db.emitted.count and "page" not in app.query_params
    huge = make_app(db=filled_db.path, query={"min_tokens": "99999999999999999999999", "page": "99999999999999999999"})
    huge.run()
    page(huge, "runs")
    assert_clean(huge)
    assert "failed" not in texts(huge) and len(_traces(huge)) == filled_db.emitted.count


def test_the_run_page_says_the_collector_went_down_outside_its_folded_picker(start_collector, make_app) -> None:
    """The page went blank: the picker inside the collapsed expander read first and stopped the page."""
    collector = start_collector()
    emitted = emit_to_collector(collector.url, rounds=1, scenarios=("success",))
    app = make_app(collector=collector.url, query={"run": emitted.first("success")})
    app.run()
    assert_clean(app)
    assert "termination=completed" in texts(app)
    collector.stop()  # the source was read a moment ago: the next run asks no health check first
    ui._cached.clear()  # the page's answers expire (10 s): the next run asks again
    app.run()
    assert not app.exception
    assert "Cannot read collector" in texts(app)
    folded = [str(e.value) for expander in app.expander for e in expander.error]
    assert folded == [], "the outage is said on the page, not inside the collapsed expander"


def test_a_run_page_lists_the_loops_found_in_the_run(filled_db, make_app) -> None:
    """Its tile said loops 3 while the steps' loop hits said 0 and no loop was shown anywhere on the page."""
    app = make_app(db=filled_db.path, query={"run": filled_db.emitted.first("loop")})
    app.run()
    assert_clean(app)
    (found,) = [t for t in tables(app) if "wasted_tokens" in t]
    loops = {m.label: m.value for m in app.metric}["loops"]
    assert len(found) == int(loops) > 0
    assert "exact" in {k for kinds in found["kind_label"] for k in kinds}
    assert "Loops found" in texts(app)
    # the wasted tokens' price beside them, as the Loops page gives it
    detail = DuckDBSource(filled_db.path).run(filled_db.emitted.first("loop"))
    assert list(found["wasted_cost"]) == [fmt.usd(x["wasted_cost_usd"], precise=True) for x in detail["loops"]]
