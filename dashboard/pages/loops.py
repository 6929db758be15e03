"""Loops: exact repeats, oscillations, repeated errors and semantic repeats, where and how costly."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from loopsight.dashboard import charts, filters, frames, ui

LISTED_LOOPS = 1000


def _wasted_tokens(frame: pd.DataFrame) -> str:
    """The tile's text: per run the tokens spent from its earliest loop on (the loop that wastes
    the most, as burn_runs.sql counts it), each run once; a lower bound when the list is full."""
    total = int(frame.groupby(["trace_id", "run_id"])["wasted_tokens"].max().fillna(0).sum()) if len(frame) else 0
    return f"≥ {total:,}" if len(frame) >= LISTED_LOOPS else f"{total:,}"


st.title("Loops")
shared = filters.current()
params = shared.params()
loops = ui.load("loops", what="Loops", limit=LISTED_LOOPS, **params)
if loops is not None:
    frame = pd.DataFrame(
        loops,
        columns=["trace_id", "run_id", "tool", "kind", "count", "first_step", "wasted_tokens"] if not loops else None,
    )
    overview = ui.fetch_quiet("overview", **params)
    tile = ((overview or {}).get("tiles") or {}).get("loop_rate") or {}
    cols = st.columns(3)
    cols[0].metric("Loop rate (runs with a loop)", ui.pct(tile.get("value")))
    cols[1].metric("Loops found", f"{len(frame):,}")
    cols[2].metric(
        "Tokens spent after a loop began",
        _wasted_tokens(frame),
        help="Per run, the tokens spent from its earliest loop on (the Token burn page's figure): "
        f"a run with several loops counts once. Over the first {LISTED_LOOPS:,} loops listed.",
    )
    if frame.empty:
        if ui.fetch("runs", limit=1, **params):
            st.success("No loops in this window.", icon=":material/check_circle:")
        else:
            ui.empty_state()
    else:
        runs = frames.runs_frame(ui.fetch("runs", limit=5000, **params))
        started = runs.set_index("trace_id")["started_at"].to_dict() if not runs.empty else {}
        frame["started_at"] = frame["trace_id"].map(started)
        left, right = st.columns(2)
        with left:
            st.subheader("Tools that loop most")
            st.altair_chart(charts.bar_by(frame, "tool", "count", color="kind", title="repeats"), width="stretch")
        with right:
            st.subheader("Loops over time")
            timed = frame.dropna(subset=["started_at"])
            if timed.empty:
                st.caption("The runs of these loops are outside the loaded window.")
            else:
                st.altair_chart(charts.events_over_time(timed, "started_at", "kind", title="loops"), width="stretch")
        st.subheader("Loops by run")
        table = frame.assign(link=[ui.run_link(t) for t in frame["trace_id"]]).sort_values(
            "wasted_tokens", ascending=False
        )
        st.dataframe(
            table[["link", "started_at", "tool", "kind", "count", "first_step", "wasted_tokens"]],
            hide_index=True,
            width="stretch",
            column_config={
                "link": st.column_config.LinkColumn("run", display_text=r"run\?run=(.{12})"),
                "started_at": st.column_config.DatetimeColumn("run started (UTC)", format="YYYY-MM-DD HH:mm:ss"),
                "first_step": "first step",
                "wasted_tokens": st.column_config.NumberColumn("wasted tokens", format="%d"),
            },
        )
