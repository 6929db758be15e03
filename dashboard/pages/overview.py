"""Overview: KPI tiles against the previous window, termination reasons over time, and the
top offenders of each kind, refreshed live."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from loopsight.dashboard import charts, filters, frames, ui

REFRESH_SECONDS = 30
# (key, label, format, lower is better)
TILES = [
    ("runs", "Runs", "count", False),
    ("success_rate", "Success rate", "rate", False),
    ("loop_rate", "Loop rate", "rate", True),
    ("tool_fail_rate", "Tool fail rate", "rate", True),
    ("tokens_per_success", "Tokens per successful run", "count", True),
    ("p95_duration_ms", "p95 run duration", "ms", True),
]


def _format(value: float | int | None, kind: str) -> str:
    if value is None:
        return "–"
    if kind == "rate":
        return f"{100 * value:.1f}%"
    if kind == "ms":
        return f"{value / 1000:,.1f} s"
    return f"{value:,.0f}"


def _delta(tile: dict, kind: str) -> str | None:
    change = tile.get("change")
    if change is None:
        return None
    if kind == "rate":
        return f"{100 * change:+.1f} pts"
    if kind == "ms":
        return f"{change / 1000:+,.1f} s"
    pct = tile.get("change_pct")
    return f"{change:+,.0f}" + (f" ({100 * pct:+.0f}%)" if pct is not None else "")


def tiles(shared: filters.Filters) -> bool:
    """The KPI row; returns False when there are no runs at all in either window."""
    answer = ui.load("overview", what="KPI tiles", **shared.params())
    if answer is None:
        return True
    values = answer.get("tiles", answer)
    runs = values.get("runs") or {}
    compared = bool(runs.get("value") or runs.get("previous"))  # no runs in either window: nothing to compare
    columns = st.columns(len(TILES))
    for column, (key, label, kind, lower_better) in zip(columns, TILES, strict=False):
        tile = values.get(key) or {}
        column.metric(
            label,
            _format(tile.get("value"), kind),
            _delta(tile, kind) if compared else None,
            delta_color="inverse" if lower_better else "normal",
            help=f"previous window: {_format(tile.get('previous'), kind)}",
        )
    return compared


def terminations(shared: filters.Filters) -> None:
    st.subheader("Termination reasons over time")
    answer = ui.load(
        "terminations", what="Termination reasons", bucket_seconds=shared.bucket_seconds, **shared.params()
    )
    if answer is None:
        return
    frame = pd.DataFrame(frames.records(answer, "terminations"))
    if frame.empty:
        st.caption("No runs in this window.")
        return
    time = frames.first_column(frame, "bucket", "time", "start") or "bucket"
    value = frames.first_column(frame, "runs", "count") or "runs"
    frame[time] = frames.to_time(frame[time])
    bucket = answer.get("bucket_seconds") if isinstance(answer, dict) else None
    end = None
    if bucket:
        end = "bucket_end"
        frame[end] = frame[time] + pd.to_timedelta(int(bucket), unit="s")
    since = shared.since()
    window = (since, filters.utcnow()) if since else None
    st.altair_chart(
        charts.terminations_over_time(frame, time=time, value=value, end=end, window=window), width="stretch"
    )


def _top(
    method: str,
    what: str,
    params: dict,
    sort: str,
    columns: list[str],
    none: str,
    shown: dict[str, object] | None = None,
) -> None:
    """The five worst rows of one question, each linking to its run."""
    answer = ui.load(method, what=what, **params)
    if answer is None:
        return
    frame = pd.DataFrame(answer)
    if frame.empty:
        st.caption(none)
    else:
        _small_table(frame.sort_values(sort, ascending=False).head(5)[columns], shown)


def offenders(shared: filters.Filters) -> None:
    """Four tables, two a row (four in a row cut their last columns at 1440 px), each ranked by its first column."""
    st.subheader("Top offenders")
    params = shared.params()
    (col_tokens, col_loops), (col_stalls, col_tools) = st.columns(2), st.columns(2)
    with col_tokens:
        st.markdown("**Runs burning the most tokens**")
        runs = ui.load("runs", what="Runs", limit=1000, **params)
        if runs is not None:
            _small_table(
                frames.runs_frame(runs).nlargest(5, "tokens")[["tokens", "trace_id", "agent"]],
                {"tokens": st.column_config.NumberColumn("tokens", format="localized", width="small")},
            )
        st.page_link(ui.page("burn"), label="Token burn →")
    with col_loops:
        st.markdown("**Longest loops**")
        _top(
            "loops",
            "Loops",
            params,
            "count",
            ["count", "kind", "trace_id", "tool"],
            "No loops.",
            {
                "count": st.column_config.NumberColumn("repeats", width="small"),
                "kind": st.column_config.TextColumn("kind", width="medium"),
            },
        )
        st.page_link(ui.page("loops"), label="Loops →")
    with col_stalls:
        st.markdown("**Stalls**")
        _top(
            "stalls",
            "Stalls",
            params,
            "duration_ms",
            ["duration_ms", "kind", "trace_id", "tool"],
            "No stalls.",
            {
                "duration_ms": st.column_config.TextColumn("duration", width="small"),
                "kind": st.column_config.TextColumn("kind", width="medium"),
            },
        )
        st.page_link(ui.page("stalls"), label="Stalls →")
    with col_tools:
        st.markdown("**Failing tools**")
        tools = ui.load("tools", what="Tools", **params)
        if tools is not None:
            frame = pd.DataFrame(tools)
            if frame.empty or not frame["errors"].any():
                st.caption("No failed tool calls.")
            else:
                frame = frame[frame["errors"] > 0].sort_values("fail_rate", ascending=False).head(5)
                _small_table(
                    frame.assign(fail_rate=[ui.pct(v) for v in frame["fail_rate"]])[["fail_rate", "tool", "calls"]],
                    {
                        "fail_rate": st.column_config.TextColumn("fail rate", width="small"),
                        "calls": st.column_config.NumberColumn("calls", width="small"),
                    },
                )
        st.page_link(ui.page("tools"), label="Tools →")


def _small_table(frame: pd.DataFrame, shown: dict[str, Any] | None = None) -> None:
    """A five-row table: durations as text, a ``trace_id`` column as a link to the run's timeline."""
    config: dict[str, Any] = dict(shown or {})
    if "duration_ms" in frame:
        frame = frame.assign(duration_ms=[frames.duration_text(v) for v in frame["duration_ms"]])
    if "trace_id" in frame:
        frame = frame.assign(trace_id=[ui.run_link(t) for t in frame["trace_id"]])
        config["trace_id"] = st.column_config.LinkColumn("run", display_text=r"run\?run=(.{8})", width="small")
    st.dataframe(frame, hide_index=True, width="stretch", column_config=config)


@st.fragment(run_every=REFRESH_SECONDS)
def live() -> None:
    shared = filters.current()
    if not tiles(shared):
        ui.empty_state()
        return
    terminations(shared)
    offenders(shared)
    st.caption(f"{ui.describe(shared)} · refreshes every {REFRESH_SECONDS} s")


st.title("Overview")
live()
