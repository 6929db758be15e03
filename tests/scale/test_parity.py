"""Every analytics question gives the same answer on DuckDB and on ClickHouse (chdb).

DuckDB is filled by loopsight's own ingest; ClickHouse as the OpenTelemetry Collector's
clickhouseexporter fills ``otel_traces`` (attributes as a string map), from the same
OTel SDK spans. ClickHouse derives the typed columns itself (materialized columns +
the ``spans`` view), so equal answers mean equal normalization rules.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from loopsight.analytics.runs import list_runs, top_runs_by_tokens, trace_detail

from .fixture_spans import BASE


def _same(value: Any) -> Any:
    """Floats rounded (the engines sum in different orders), booleans told from 0 / 1 (the JSON
    answer differs); everything else as is."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: _same(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_same(v) for v in value]
    return value


def test_clickhouse_store_has_every_fixture_span(duck: Any, clickhouse: Any) -> None:
    assert (
        duck.execute("SELECT count(*) FROM spans").fetchall()
        == clickhouse.execute("SELECT count() FROM spans").fetchall()
    )
    assert (
        clickhouse.execute("SELECT count() FROM spans").fetchall()[0][0] == 3 * 37 + 2 + 17
    )  # three of each trace, the stuck one, a session's two runs and a no_progress run


FILTERS = [
    {},
    {"limit": 4},
    {"limit": 3, "offset": 5},
    {"agent": "researcher"},
    {"service": "gateway"},
    {"status": "error"},
    {"status": "ok"},
    {"termination_reason": "loop_detected"},
    {"since": BASE.replace(tzinfo=None, hour=9, minute=30), "until": BASE.replace(tzinfo=None, hour=10, minute=30)},
    {"tool": "search"},
    {"tool": "kb_search"},
    {"min_tokens": 3_000},
    {"agent": "nobody"},
    {"session": "sess-fixture"},
    {"q": "search"},
    {"q": "FORBIDDEN"},
    {"q": "sess-fixture"},
]


@pytest.mark.parametrize("filters", FILTERS, ids=[",".join(f) or "none" for f in FILTERS])
def test_list_runs_is_the_same(duck: Any, clickhouse: Any, filters: dict[str, Any]) -> None:
    expected = _same(list_runs(duck, **{"limit": 100, **filters}))
    assert _same(list_runs(clickhouse, **{"limit": 100, **filters})) == expected
    if not filters:
        assert {r["agent"] for r in expected} == {
            "order-assistant",
            "researcher",
            "oi-agent",
            "planner",
            "support-bot",
            "rephraser",
            "concierge",
            "reader",
        }


def test_run_ids_filter_and_top_runs_are_the_same(duck: Any, clickhouse: Any) -> None:
    some = [r["run_id"] for r in list_runs(duck, limit=4)]
    assert _same(list_runs(clickhouse, run_ids=some)) == _same(list_runs(duck, run_ids=some))
    assert list_runs(clickhouse, run_ids=[]) == list_runs(duck, run_ids=[]) == []
    top = top_runs_by_tokens(duck, limit=5)
    assert [r["tokens"] for r in top] == sorted((r["tokens"] for r in top), reverse=True) and top
    assert _same(top_runs_by_tokens(clickhouse, limit=5)) == _same(top)
    assert _same(top_runs_by_tokens(clickhouse, limit=3, agent="researcher")) == _same(
        top_runs_by_tokens(duck, limit=3, agent="researcher")
    )


def _one_trace_per_agent(duck: Any) -> list[str]:
    seen: dict[str, str] = {}
    for run in list_runs(duck, limit=100):
        seen.setdefault(run["agent"], run["trace_id"])
    return sorted(seen.values())


def test_trace_detail_is_the_same(duck: Any, clickhouse: Any) -> None:
    for trace_id in _one_trace_per_agent(duck):
        expected = _same(trace_detail(duck, trace_id))
        got = _same(trace_detail(clickhouse, trace_id))
        for part in ("runs", "spans", "steps", "loops"):
            assert got[part] == expected[part], (trace_id, part)
    looping = [t for t in _one_trace_per_agent(duck) if trace_detail(duck, t)["loops"]]
    assert looping, "the fixture's loops are compared too"
    empty = {"runs": [], "spans": [], "steps": [], "loops": [], "stuck": False}
    assert trace_detail(clickhouse, "0" * 32) == empty


def test_normalization_rules_hold_on_clickhouse(clickhouse: Any) -> None:
    """Spot checks of the derived columns, so parity is not parity of two wrong answers."""
    rows = clickhouse.execute(
        "SELECT SpanName, span_type, tool, args_hash, error_type, error_class, input_tokens, output_tokens, agent, run_id IS NULL "
        "FROM spans WHERE Timestamp < {t:DateTime64(6, 'UTC')} ORDER BY Timestamp, SpanId",
        {"t": datetime(2025, 3, 1, 9, 30)},
    ).fetchall()
    by_name = {}
    for row in rows:
        by_name.setdefault(row[0], row)
    assert by_name["execute_tool search"][1:6] == (
        "tool",
        "search",
        by_name["execute_tool search"][3],
        "timeout",
        "transient",
    )
    assert by_name["lookup"][4:6] == ("ValueError", "invalid_argument")  # from the exception event
    assert by_name["fetch"][4:6] == ("HTTP 404 not found", "permanent")  # from the status message
    assert by_name["web_fetch"][1] == "tool" and by_name["web_fetch"][5] == "transient"  # Langfuse level ERROR + 429
    assert by_name["generation"][6:8] == (250, 12)  # Langfuse usage_details JSON
    assert by_name["openai.chat"][6:8] == (90, 9)  # legacy prompt/completion tokens
    assert by_name["kb.search"][2] == "kb_search" and len(by_name["kb.search"][3]) == 16
    assert by_name["background"][9]  # a tool outside any agent has no run
    assert by_name["POST /ask"][1] == "other"


WINDOW = {"since": datetime(2025, 3, 1, 9, 0), "until": datetime(2025, 3, 1, 11, 0)}


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"by_agent": True},
        {"agent": "researcher"},
        {"tool": "search"},
        {"service": "gateway", "by_agent": True},
        WINDOW,
    ],
    ids=["all", "by_agent", "agent", "tool", "service", "window"],
)
def test_tool_stats_is_the_same(duck: Any, clickhouse: Any, kwargs: dict[str, Any]) -> None:
    from loopsight.analytics.tools import tool_stats

    expected = _same(tool_stats(duck, **kwargs))
    assert expected, kwargs
    assert _same(tool_stats(clickhouse, **kwargs)) == expected


@pytest.mark.parametrize("bucket_seconds", [600, 3600, 7 * 86400])  # weeks from the epoch (a Thursday)
def test_terminations_are_the_same(duck: Any, clickhouse: Any, bucket_seconds: int) -> None:
    from loopsight.analytics.terminations import terminations

    expected = _same(terminations(duck, bucket_seconds=bucket_seconds, **WINDOW))
    assert expected
    assert _same(terminations(clickhouse, bucket_seconds=bucket_seconds, **WINDOW)) == expected


@pytest.mark.parametrize("filters", [f for f in FILTERS if not {"limit", "offset", "since"} & f.keys()])
def test_terminations_count_the_runs_the_runs_filters_keep(duck: Any, clickhouse: Any, filters: dict[str, Any]) -> None:
    from loopsight.analytics.runs import count_runs
    from loopsight.analytics.terminations import terminations

    expected = _same(terminations(duck, bucket_seconds=3600, **filters))
    assert sum(t["runs"] for t in expected["totals"]) == count_runs(duck, **filters)  # one filter definition
    assert _same(terminations(clickhouse, bucket_seconds=3600, **filters)) == expected


@pytest.mark.parametrize("filters", [{}, {"agent": "researcher"}, {"service": "shop"}], ids=["all", "agent", "service"])
def test_overview_is_the_same(duck: Any, clickhouse: Any, filters: dict[str, Any]) -> None:
    from loopsight.analytics.overview import overview

    window = {"since": datetime(2025, 3, 1, 10, 0), "until": datetime(2025, 3, 1, 11, 0)}
    expected = _same(overview(duck, **window, **filters))
    assert expected["tiles"]["runs"]["value"] > 0
    assert _same(overview(clickhouse, **window, **filters)) == expected


@pytest.mark.parametrize("field", ["agent", "service", "tool"])
def test_field_values_and_run_counts_are_the_same(duck: Any, clickhouse: Any, field: str) -> None:
    from loopsight.analytics import count_runs, field_values

    assert field_values(clickhouse, field) == field_values(duck, field) != []
    for filters in FILTERS:
        counted = {k: v for k, v in filters.items() if k not in ("limit", "offset")}
        assert count_runs(clickhouse, **counted) == count_runs(duck, **counted)


def test_runs_that_start_together_are_paged_once_each_and_alike(both_stores: Any) -> None:
    """Runs of one trace starting in the same microsecond (one clock tick: parallel agents) were ordered
    by start and trace only: a page repeated a run another page had, and the engines listed them apart."""
    from spans import make_run, request_of

    from loopsight.analytics.burn import burn_runs

    start = int(BASE.timestamp() * 1e9)
    requests = []
    for trace in range(3):
        trace_id = bytes([trace + 1]) * 16
        runs = [make_run(tools=1, start_ns=start, trace_id=trace_id, agent=agent) for agent in ("zed", "amy", "kim")]
        requests.append(request_of([span for run in runs for span in run]))
    duck, clickhouse = both_stores(*requests)
    for con in (duck, clickhouse):
        pages = [list_runs(con, limit=2, offset=offset) for offset in range(0, 9, 2)]
        assert sorted(r["run_id"] for page in pages for r in page) == sorted(r["run_id"] for r in list_runs(con))
    for offset in range(0, 9, 2):
        assert list_runs(clickhouse, limit=2, offset=offset) == list_runs(duck, limit=2, offset=offset)
    assert top_runs_by_tokens(clickhouse, limit=4) == top_runs_by_tokens(duck, limit=4)
    assert _same(burn_runs(clickhouse, limit=4)) == _same(burn_runs(duck, limit=4))
    trace_id = (bytes([1]) * 16).hex()
    assert _same(trace_detail(clickhouse, trace_id)["steps"]) == _same(trace_detail(duck, trace_id)["steps"])
