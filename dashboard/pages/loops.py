"""Loops: exact repeats, oscillations, repeated errors, semantic repeats and no-progress, where
(which agent, which tool) and how costly."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from loopsight.dashboard import charts, filters, frames, ui
from loopsight.dashboard import format as fmt

LISTED_LOOPS = 1000
# The runs whose start times place the loops on the time axis (loops carry no time of their own yet).
RUNS_FOR_TIMES = 1000
COLUMNS = ["trace_id", "run_id", "tool", "kind", "count", "first_step", "wasted_tokens"]


def _wasted_tokens(frame: pd.DataFrame) -> str:
    """The tile's text: per run the tokens spent from its earliest loop on (the loop that wastes
    the most, as burn_runs.sql counts it), each run once; a lower bound when the list is full."""
    total = int(frame.groupby(["trace_id", "run_id"])["wasted_tokens"].max().fillna(0).sum()) if len(frame) else 0
    return f"≥ {fmt.count(total)}" if len(frame) >= LISTED_LOOPS else fmt.count(total)


def body() -> None:
    shared = filters.current()
    params = shared.params()
    loops = ui.load("loops", what="Loops", limit=LISTED_LOOPS, **params)
    if loops is None:
        return
    frame, _ = ui.with_agents("loops", loops, limit=LISTED_LOOPS, **params)
    for column in COLUMNS:
        if column not in frame:
            frame[column] = pd.Series(dtype="object")
    overview = ui.fetch_quiet("overview", **params)
    tile = ((overview or {}).get("tiles") or {}).get("loop_rate") or {}
    capped = len(frame) >= LISTED_LOOPS
    cols = st.columns(3)
    cols[0].metric("Loop rate (runs with a loop)", ui.pct(tile.get("value")))
    cols[1].metric(
        "Loops found",
        f"≥ {fmt.count(len(frame))}" if capped else fmt.count(len(frame)),
        help=f"The list stops at {fmt.count(LISTED_LOOPS)} loops: narrow the window or pick an agent."
        if capped
        else None,
    )
    cols[2].metric(
        "Tokens spent after a loop began",
        _wasted_tokens(frame),
        help="Per run, the tokens spent from its earliest loop on (the Token burn page's figure): "
        f"a run with several loops counts once. Over the first {fmt.count(LISTED_LOOPS)} loops listed.",
    )
    if frame.empty:
        if ui.fetch("runs", limit=1, **params):
            st.success("No loops in this window.", icon=":material/check_circle:")
        else:
            ui.empty_state()
        return
    runs = frames.runs_frame(ui.fetch("runs", limit=RUNS_FOR_TIMES, **params))
    started = runs.set_index("trace_id")["started_at"].to_dict() if not runs.empty else {}
    frame["started_at"] = frame["trace_id"].map(started)
    left, right = st.columns(2)
    with left:
        st.subheader("Tools that loop most")
        ui.chart(charts.bar_by(frame, "tool", "count", color="kind", meaning="loop_kind", title="repeats"))
    with right:
        st.subheader("Loops over time")
        _over_time(shared, frame)
    st.subheader("Loops by run")
    table = frame.sort_values("wasted_tokens", ascending=False)
    table = table.assign(run=[fmt.short_id(t) for t in table["trace_id"]])[
        ["trace_id", "run", "started_at", "agent", "tool", "kind", "count", "first_step", "wasted_tokens"]
    ]
    ui.run_table(
        table,
        {
            "run": st.column_config.TextColumn("run", width=105, help="Click a row to open the run."),
            "started_at": st.column_config.DatetimeColumn("run started (UTC)", format="YYYY-MM-DD HH:mm:ss", width=150),
            "agent": st.column_config.TextColumn("agent", width=135),
            "tool": st.column_config.TextColumn("tool", width=210, help="For an oscillation: the tools it alternates"),
            "kind": st.column_config.TextColumn("kind", width=110),
            "count": st.column_config.NumberColumn("repeats", format="%,d", width=65),
            "first_step": st.column_config.NumberColumn("first step", format="%,d", width=70),
            "wasted_tokens": st.column_config.NumberColumn(
                "wasted tokens", format="%,d", width=100, help="tokens the run spent from this loop's first step on"
            ),
        },
        key="loops_table",
        colored={"kind": "loop_kind"},
        column_order=[c for c in table.columns if c != "trace_id"],
        pinned=False,
    )


def _over_time(shared: filters.Filters, frame: pd.DataFrame) -> None:
    timed = frame.dropna(subset=["started_at"])
    if timed.empty:
        st.caption("The runs of these loops are not among the newest runs of the window.")
        return
    start, end = shared.window()
    low, high = frames.fitted_window(timed["started_at"], timed["started_at"], (start, end))
    bucket = filters.bucket_seconds(max((high - low).total_seconds(), 60))
    counted = frames.count_per_bucket(timed, "started_at", "kind", bucket)
    window = frames.fitted_window(counted["bucket"], counted["bucket_end"], (start, end))
    ui.chart(charts.events_over_time(counted, window, title="loops"))
    caption = f"Loops by the start of their run, in {fmt.seconds(bucket)} buckets ({ui.describe(shared)})"
    if len(timed) < len(frame):
        caption += f"; {fmt.count(len(timed))} of {fmt.count(len(frame))} placed (the newest runs' loops)"
    st.caption(caption + ".")


st.title("Loops")
ui.live(body)
