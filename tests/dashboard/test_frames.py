"""The pure parts: shaping answers into frames, chart specs, escaping, source selection."""

from __future__ import annotations

import altair as alt
import pandas as pd
import pytest

from loopsight.dashboard import charts, frames, launch, ui
from loopsight.dashboard.data import ApiSource, DuckDBSource, source_from_env


def _span(span_id: str, parent: str | None, start: str, ms: float, **extra) -> dict:
    return {
        "span_id": span_id,
        "parent_span_id": parent,
        "name": f"span {span_id}",
        "start": start,
        "duration_ms": ms,
        "status": "unset",
        "kind": "tool",
        **extra,
    }


def test_waterfall_frames_keep_tree_order_and_place_markers() -> None:
    spans = [
        _span("c", "a", "2026-01-01T00:00:00.300Z", 50, status="error", error_type="timeout", error_class="transient"),
        _span("a", None, "2026-01-01T00:00:00.000Z", 1000, kind="agent"),
        _span(
            "b",
            "a",
            "2026-01-01T00:00:00.100Z",
            100,
            attributes={"loopsight.loop.kind": "exact"},
            events=[
                {"time": "2026-01-01T00:00:00.150Z", "name": "retry", "attributes": {"error.type": "429"}},
                {"time": "2026-01-01T00:00:00.160Z", "name": "log", "attributes": {}},
            ],
        ),
        _span("d", "zz", "2026-01-01T00:00:00.500Z", 10),  # parent never arrived
    ]
    bars, markers = frames.waterfall_frames(spans)
    assert list(bars["span_id"]) == ["a", "b", "c", "d"]
    assert list(bars["row"]) == ["000 span a", "001 · span b", "002 · span c", "003 span d"]
    assert list(bars["start_ms"]) == [0.0, 100.0, 300.0, 500.0]
    assert markers.to_dict("records") == [
        {"row": "001 · span b", "at_ms": 100.0, "marker": "loop", "detail": "loop: exact"},
        {"row": "001 · span b", "at_ms": 150.0, "marker": "retry", "detail": "retry 429"},
        {"row": "002 · span c", "at_ms": 350.0, "marker": "error", "detail": "timeout / transient"},
    ]
    chart = charts.waterfall(bars, markers)
    assert isinstance(chart, alt.LayerChart) and chart.to_dict()["height"] == {"step": charts.ROW_HEIGHT}


def test_span_tree_survives_a_parent_cycle() -> None:
    spans = [_span("a", "b", "1", 1), _span("b", "a", "2", 1)]
    assert sorted(s["span_id"] for s, _ in frames.span_tree_order(spans)) == ["a", "b"]


def test_span_detail_is_all_text() -> None:
    detail = frames.span_detail(
        {
            "span_id": "a",
            "input_tokens": None,
            "attributes": {"k": "<b>v</b>"},
            "events": [{"time": "t", "name": "retry", "attributes": {"x": 1}}],
        }
    )
    assert detail.to_dict("records") == [
        {"field": "span_id", "value": "a"},
        {"field": "input_tokens", "value": "—"},
        {"field": "attribute k", "value": "<b>v</b>"},
        {"field": "event 0 retry", "value": "t x=1"},
    ]


def test_runs_frame_adds_tokens_and_parses_times() -> None:
    frame = frames.runs_frame(
        [{"trace_id": "t", "started_at": "2026-01-01T00:00:01.000000Z", "input_tokens": 5, "output_tokens": 2}]
    )
    assert frame["tokens"].tolist() == [7]
    assert frame["started_at"].iloc[0] == pd.Timestamp("2026-01-01 00:00:01")
    assert frames.runs_frame([]).empty


@pytest.mark.parametrize("value", ["[x](http://e.vil)", "<script>alert(1)</script>", "a`b``c", "`edge`", "www.e.vil"])
def test_literal_is_a_code_span_holding_the_value(value: str) -> None:
    span = ui.literal(value)
    fence = span[: len(span) - len(span.lstrip("`"))]
    assert span.endswith(fence) and fence not in span[len(fence) : -len(fence)]
    assert span[len(fence) : -len(fence)].strip(" ") == value.strip(" ")


def test_escape_defuses_markdown_and_autolinks() -> None:
    escaped = ui.escape("[x](http://e.vil) www.e.vil <b> a@b.c")
    assert "http:" not in escaped and "www." not in escaped and "@" not in escaped and "<b>" not in escaped


def test_source_from_env_prefers_the_dashboard_db() -> None:
    assert source_from_env(
        {"LOOPSIGHT_DASHBOARD_DB": "/x.duckdb", "LOOPSIGHT_COLLECTOR_URL": "http://h:1"}
    ) == DuckDBSource("/x.duckdb")
    assert source_from_env({"LOOPSIGHT_DB": "/collector.duckdb"}) == ApiSource("http://127.0.0.1:4318")
    api = source_from_env({"LOOPSIGHT_COLLECTOR_URL": "http://h:1/", "LOOPSIGHT_TOKEN": "s3cret"})
    assert (api.url, api.token) == ("http://h:1", "s3cret")
    assert "s3cret" not in repr(api), "the token is kept out of reprs"


def test_launch_refuses_two_sources() -> None:
    with pytest.raises(ValueError, match="not both"):
        launch(collector="http://127.0.0.1:4318", db="x.duckdb")
