"""Runs: every agent run in the window, filterable, each row linking to its timeline."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import streamlit as st

from loopsight.attributes import TERMINATION_REASONS
from loopsight.dashboard import charts, filters, frames, ui

LIMIT = 1000

st.title("Runs")
shared = filters.current()
tool_names = sorted(str(t["tool"]) for t in ui.fetch_quiet("tools", **shared.params()) or [] if t.get("tool"))
status_col, reason_col, tool_col, tokens_col = st.columns(4)
status = status_col.selectbox("Status", ["any", "ok", "error"], key="runs_status")
reason = reason_col.selectbox("Termination reason", ["any", *TERMINATION_REASONS], key="runs_reason")
tool = tool_col.selectbox("Used tool", ["any", *tool_names], key="runs_tool")
min_tokens = tokens_col.number_input(
    "At least this many tokens", min_value=0, value=0, step=1000, key="runs_min_tokens"
)

params = {
    **shared.params(),
    "status": None if status == "any" else status,
    "termination_reason": None if reason == "any" else reason,
    "tool": None if tool == "any" else tool,
    "min_tokens": min_tokens or None,
    "limit": LIMIT,
}
runs = ui.load("runs", what="Runs", **params)
if runs is not None:
    frame = frames.runs_frame(runs)
    if frame.empty:
        in_effect = [
            f"{label} {ui.literal(value)}"
            for label, value in (("status", status), ("termination", reason), ("used tool", tool))
            if value != "any"
        ]
        ui.empty_state(in_effect + ([f"at least {min_tokens:,} tokens"] if min_tokens else []))
    else:
        st.caption(
            f"{len(frame)} runs ({ui.describe(shared)}), newest first"
            + (f"; showing the newest {LIMIT}" if len(runs) >= LIMIT else "")
            + ". Select a row or click its id to open the timeline."
        )
        now = filters.utcnow()
        # All time: from the first run, and never narrower than 15 minutes.
        earliest = frame["started_at"].min()
        since = shared.since() or min(earliest if pd.notna(earliest) else now, now - timedelta(minutes=15))
        bucket = filters.bucket_seconds((now - since).total_seconds())
        st.altair_chart(charts.runs_over_time(frames.runs_per_bucket(frame, bucket), (since, now)), width="stretch")
        frame = frame.assign(link=[ui.run_link(t) for t in frame["trace_id"]])
        table = frame[
            [
                "link",
                "started_at",
                "agent",
                "service",
                "status",
                "termination_reason",
                "steps",
                "tokens",
                "duration_ms",
                "tool_calls",
                "tool_errors",
                "retries",
                "loops",
            ]
        ]
        event = st.dataframe(
            table,
            hide_index=True,
            width="stretch",
            on_select="rerun",
            selection_mode="single-row",
            key="runs_table",
            column_config={
                "link": st.column_config.LinkColumn("run", display_text=r"run\?run=(.{12})", width="small"),
                "started_at": st.column_config.DatetimeColumn("started (UTC)", format="YYYY-MM-DD HH:mm:ss"),
                "termination_reason": "termination reason",
                "duration_ms": st.column_config.NumberColumn("duration (ms)", format="%.0f"),
                "tool_calls": "tool calls",
                "tool_errors": "tool errors",
            },
        )
        selected = event.selection.rows if event is not None else []
        if selected:
            st.switch_page(ui.page("run"), query_params={"run": table.iloc[selected[0]]["link"].split("=", 1)[1]})
