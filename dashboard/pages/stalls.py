"""Stalls: slow calls against their tool's usual latency, retry backoff, idle gaps, and runs stuck now."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from loopsight.dashboard import charts, filters, ui

STUCK_REFRESH_SECONDS = 15
COLUMNS = ["trace_id", "run_id", "span_id", "kind", "tool", "duration_ms", "expected_ms"]
KIND_LABELS = {"slow_call": "slow call", "backoff": "retry backoff", "idle_gap": "idle gap", "stuck": "stuck"}


def _table(frame: pd.DataFrame) -> None:
    table = frame.assign(
        link=[ui.run_link(t) for t in frame["trace_id"]],
        slower=(frame["duration_ms"] / frame["expected_ms"]).where(frame["expected_ms"] > 0),
    )
    st.dataframe(
        table[["link", "kind", "tool", "duration_ms", "expected_ms", "slower"]],
        hide_index=True,
        width="stretch",
        column_config={
            "link": st.column_config.LinkColumn("run", display_text=r"run\?run=(.{12})"),
            "duration_ms": st.column_config.NumberColumn("duration (ms)", format="%.0f"),
            "expected_ms": st.column_config.NumberColumn("usual (ms)", format="%.0f"),
            "slower": st.column_config.NumberColumn("× usual", format="%.1f"),
        },
    )


@st.fragment(run_every=STUCK_REFRESH_SECONDS)
def stuck_now() -> None:
    st.subheader("Stuck now")
    shared = filters.current()
    stalls = ui.load("stalls", what="Stuck runs", kind="stuck", agent=shared.agent, service=shared.service)
    if stalls is None:
        return
    frame = pd.DataFrame(stalls, columns=COLUMNS) if not stalls else pd.DataFrame(stalls)
    stuck = frame[frame["kind"] == "stuck"]
    if stuck.empty:
        st.success("No run is stuck right now.", icon=":material/check_circle:")
    else:
        st.warning(f"{len(stuck)} run(s) in flight with no progress.", icon=":material/hourglass_top:")
        _table(stuck)
    st.caption(f"refreshes every {STUCK_REFRESH_SECONDS} s")


st.title("Stalls")
shared = filters.current()
stuck_now()
stalls = ui.load("stalls", what="Stalls", **shared.params())
if stalls is not None:
    frame = pd.DataFrame(stalls, columns=COLUMNS) if not stalls else pd.DataFrame(stalls)
    past = frame[frame["kind"] != "stuck"]
    st.subheader("Stalls in this window")
    if past.empty:
        if ui.fetch("runs", limit=1, **shared.params()):
            st.success("No stalls in this window.", icon=":material/check_circle:")
        else:
            ui.empty_state()
    else:
        past = past.assign(kind=past["kind"].map(lambda k: KIND_LABELS.get(k, k)), tool=past["tool"].fillna("(run)"))
        left, right = st.columns(2)
        with left:
            st.caption("Time lost by kind and tool")
            st.altair_chart(
                charts.bar_by(past, "tool", "duration_ms", color="kind", title="ms stalled", value_format=",.0f"),
                width="stretch",
            )
        with right:
            st.caption("Count by kind")
            st.altair_chart(charts.bar_by(past.assign(n=1), "kind", "n", title="stalls"), width="stretch")
        _table(past.sort_values("duration_ms", ascending=False))
