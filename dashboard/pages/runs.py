"""Runs: every agent run in the window, filterable; a click on a row opens its timeline."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from loopsight.attributes import TERMINATION_REASONS
from loopsight.dashboard import charts, filters, frames, ui
from loopsight.dashboard import format as fmt

LIMIT = 1000
COLUMNS = [
    "run",
    "started_at",
    "agent",
    "status",
    "termination_reason",
    "steps",
    "tool_calls",
    "tool_errors",
    "retries",
    "loops",
    "tokens",
    "duration",
    "service",
    "trace_id",
]
COLOR_BY = {"status": "status", "termination_reason": "termination reason"}


def _window_count(shared: filters.Filters, status: str | None, reason: str | None) -> int | None:
    """Runs in the whole window with this status and reason, counted on the server (``None`` if unknown)."""
    answer = ui.fetch_quiet("terminations", bucket_seconds=shared.bucket_seconds, **shared.params())
    totals = (answer or {}).get("totals") if isinstance(answer, dict) else None
    if totals is None:
        return None
    total = 0
    for row in totals:
        if reason and row.get("termination_reason") != reason:
            continue
        runs, ok = int(row.get("runs") or 0), int(row.get("ok") or 0)
        total += {"ok": ok, "error": runs - ok}.get(status or "", runs)
    return total


def _config() -> dict[str, Any]:
    return {
        "run": st.column_config.TextColumn(
            "run", width=105, pinned=True, help="The trace id's first 12 characters (the whole id is the last column)."
        ),
        "started_at": st.column_config.DatetimeColumn("started (UTC)", format="YYYY-MM-DD HH:mm:ss", width=145),
        "agent": st.column_config.TextColumn("agent", width=135),
        "status": st.column_config.TextColumn("status", width=58),
        "termination_reason": st.column_config.TextColumn("termination", width=112),
        "steps": st.column_config.NumberColumn("steps", width=50, format="%,d"),
        "tool_calls": st.column_config.NumberColumn("tool calls", width=68, format="%,d"),
        "tool_errors": st.column_config.NumberColumn("errors", width=54, format="%,d", help="failed tool calls"),
        "retries": st.column_config.NumberColumn("retries", width=56, format="%,d"),
        "loops": st.column_config.NumberColumn("loops", width=50, format="%,d"),
        "tokens": st.column_config.NumberColumn("tokens", width=70, format="%,d", help="input + output"),
        "duration": st.column_config.TextColumn("duration", width=74),
        "service": st.column_config.TextColumn("service", width=120),
    }


def body() -> None:
    shared = filters.current()
    tool_names = sorted(str(t["tool"]) for t in ui.fetch_quiet("tools", **shared.params()) or [] if t.get("tool"))
    status_col, reason_col, tool_col, tokens_col, color_col = st.columns([1, 1.3, 1.3, 1.2, 1])
    status = status_col.selectbox("Status", ["any", "ok", "error"], key="runs_status")
    reason = reason_col.selectbox("Termination reason", ["any", *TERMINATION_REASONS], key="runs_reason")
    tool = tool_col.selectbox("Used tool", ["any", *tool_names], key="runs_tool")
    min_tokens = tokens_col.number_input(
        "At least this many tokens", min_value=0, value=0, step=1000, key="runs_min_tokens"
    )
    color = str(
        color_col.selectbox("Colour by", list(COLOR_BY), format_func=lambda c: COLOR_BY.get(c, c), key="runs_color")
    )
    chosen_status = None if status == "any" else status
    chosen_reason = None if reason == "any" else reason
    params = {
        **shared.params(),
        "status": chosen_status,
        "termination_reason": chosen_reason,
        "tool": None if tool == "any" else tool,
        "min_tokens": min_tokens or None,
        "limit": LIMIT,
    }
    runs = ui.load("runs", what="Runs", **params)
    if runs is None:
        return
    frame = frames.runs_frame(runs)
    if frame.empty:
        in_effect = [
            f"{label} {ui.literal(value)}"
            for label, value in (("status", status), ("termination", reason), ("used tool", tool))
            if value != "any"
        ]
        ui.empty_state(in_effect + ([f"at least {fmt.count(min_tokens)} tokens"] if min_tokens else []))
        return
    server_side = tool == "any" and not min_tokens
    total = _window_count(shared, chosen_status, chosen_reason) if server_side else None
    listed = f"{fmt.count(len(frame))} runs" if total is None else f"{fmt.count(total)} runs"
    st.caption(
        f"{listed} ({ui.describe(shared)})"
        + (
            f"; the table lists the newest {fmt.count(len(frame))}"
            if total is not None and total > len(frame)
            else (f"; showing the newest {fmt.count(LIMIT)}" if len(runs) >= LIMIT else "")
        )
        + ". Click a run to open its timeline."
    )
    _chart(shared, frame, server_side, chosen_status, chosen_reason, color)
    table = frame.assign(
        run=[fmt.short_id(t) for t in frame["trace_id"]], duration=[fmt.duration(v) for v in frame["duration_ms"]]
    )[COLUMNS]
    ui.run_table(
        table,
        _config(),
        key="runs_table",
        colored={"status": "status", "termination_reason": "termination_reason"},
        pinned=False,
    )


def _chart(
    shared: filters.Filters,
    frame: pd.DataFrame,
    server_side: bool,
    status: str | None,
    reason: str | None,
    color: str,
) -> None:
    if server_side:
        timeline = ui.run_timeline(shared, status=status, reason=reason, color=color, listed=LIMIT)
        if timeline is not None and not timeline[0].empty:
            counted, _bucket, window = timeline
            ui.chart(charts.runs_over_time(counted, window, color=color), key="runs_chart")
            return
    # Filters the server cannot count by (a tool, a token floor): the runs listed.
    start, end = shared.window()
    low, high = frames.fitted_window(frame["started_at"], frame["started_at"], (start, end))
    bucket = filters.bucket_seconds(max((high - low).total_seconds(), 60))
    counted = frames.runs_per_bucket(frame, bucket, color=color)
    low, high = frames.fitted_window(counted["bucket"], counted["bucket_end"], (start, end))
    ui.chart(charts.runs_over_time(counted, (low, high), color=color), key="runs_chart")
    if len(frame) >= LIMIT:
        st.caption(f"The chart counts the {fmt.count(LIMIT)} runs listed (no server count for these filters yet).")


st.title("Runs")
ui.live(body)
