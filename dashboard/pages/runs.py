"""Runs: every agent run in the window, filterable and searchable (``?q=`` in the URL), counted over the whole
window, a page of them at a time; a click on a row opens its timeline."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from loopsight.attributes import TERMINATION_REASONS
from loopsight.dashboard import charts, filters, frames, ui
from loopsight.dashboard import format as fmt

LIMIT = ui.RUNS_PAGE
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
    "cost",
    "duration",
    "service",
    "trace_id",
]
COLOR_BY = {"status": "status", "termination_reason": "termination reason"}


def _search_from_url() -> None:
    """The search box starts from the link's ``q``; typing in it rewrites the URL (like the sidebar's filters)."""
    if "runs_q" not in st.session_state:
        st.session_state["runs_q"] = st.query_params.get("q") or ""


def _first_page() -> None:
    """A filter changed: back to the first page (and out of the link)."""
    st.session_state["runs_offset"] = 1
    if "page" in st.query_params:
        del st.query_params["page"]


def _search_to_url() -> None:
    typed = (st.session_state.get("runs_q") or "").strip()
    if typed:
        st.query_params["q"] = typed
    elif "q" in st.query_params:
        del st.query_params["q"]
    _first_page()


def _config() -> dict[str, Any]:
    return {
        "run": st.column_config.TextColumn(
            "run", width=105, pinned=True, help="The trace id's first 12 characters (the whole id is the last column)."
        ),
        "started_at": st.column_config.DatetimeColumn("started (UTC)", format="YYYY-MM-DD HH:mm:ss", width=140),
        "agent": st.column_config.TextColumn("agent", width=122),
        "status": st.column_config.TextColumn("status", width=58),
        "termination_reason": st.column_config.TextColumn("termination", width=108),
        "steps": st.column_config.NumberColumn("steps", width=50, format="%,d"),
        "tool_calls": st.column_config.NumberColumn("tool calls", width=68, format="%,d"),
        "tool_errors": st.column_config.NumberColumn("errors", width=54, format="%,d", help="failed tool calls"),
        "retries": st.column_config.NumberColumn("retries", width=56, format="%,d"),
        "loops": st.column_config.NumberColumn("loops", width=50, format="%,d"),
        "tokens": st.column_config.NumberColumn("tokens", width=70, format="%,d", help="input + output"),
        "cost": st.column_config.TextColumn(
            "cost", width=70, help="its priced model calls; a dash: none is priced ('unpriced': calls without a price)"
        ),
        "duration": st.column_config.TextColumn("duration", width=74),
        "service": st.column_config.TextColumn("service", width=120),
    }


def body() -> None:
    shared = filters.current()
    _search_from_url()
    tool_names = ui.picker_values("tool", shared)
    search = st.text_input(
        "Search runs",
        key="runs_q",
        on_change=_search_to_url,
        placeholder="trace id, agent, service, tool, error, span name or attribute value",
        max_chars=256,
    ).strip()
    status_col, reason_col, tool_col, tokens_col, color_col = st.columns([1, 1.3, 1.3, 1.2, 1])
    # Every filter of the page is in the link too (README: a link opens the same view).
    linked = {
        "runs_status": ("status", ["any", "ok", "error"]),
        "runs_reason": ("reason", ["any", *TERMINATION_REASONS]),
        "runs_tool": ("tool", ["any", *tool_names]),
        "runs_color": ("color", list(COLOR_BY)),
    }
    for key, (param, options) in linked.items():
        ui.from_url(key, param, options)
    # numbers the API takes (min_tokens up to 10**15, offsets up to 10**9): a larger one in a link is left out
    ui.from_url("runs_min_tokens", "min_tokens", ui.whole_number(0, 10**15))
    ui.from_url("runs_offset", "page", ui.whole_number(2, 10**9 // LIMIT))

    def kept(key: str, then: bool = True) -> Any:
        param, options = linked[key]
        return ui.to_url(key, param, options[0], _first_page if then else None)

    status = status_col.selectbox("Status", linked["runs_status"][1], key="runs_status", on_change=kept("runs_status"))
    reason = reason_col.selectbox(
        "Termination reason", linked["runs_reason"][1], key="runs_reason", on_change=kept("runs_reason")
    )
    tool = tool_col.selectbox("Used tool", linked["runs_tool"][1], key="runs_tool", on_change=kept("runs_tool"))
    min_tokens = tokens_col.number_input(
        "At least this many tokens",
        min_value=0,
        step=1000,
        key="runs_min_tokens",
        on_change=ui.to_url("runs_min_tokens", "min_tokens", 0, _first_page),
    )
    color = str(
        color_col.selectbox(
            "Colour by",
            linked["runs_color"][1],
            format_func=lambda c: COLOR_BY.get(c, c),
            key="runs_color",
            on_change=kept("runs_color", then=False),
        )
    )
    chosen_status = None if status == "any" else status
    chosen_reason = None if reason == "any" else reason
    params = {
        **shared.params(),
        "status": chosen_status,
        "termination_reason": chosen_reason,
        "tool": None if tool == "any" else tool,
        "min_tokens": min_tokens or None,
        "q": search or None,
    }
    page_number = int(st.session_state.get("runs_offset") or 1)
    answer = ui.load("runs_page", what="Runs", limit=LIMIT, offset=(page_number - 1) * LIMIT, **params)
    if answer is None:
        return
    runs = answer.get("runs") or []
    total = answer.get("total")
    if not runs and page_number > 1:  # past the last page (a stale link): the first one
        _first_page()
        st.rerun()
    frame = frames.runs_frame(runs)
    in_effect = [  # this page's own filters, beside the shared ones
        f"{label} {ui.literal(value)}"
        for label, value in (("status", status), ("termination", reason), ("used tool", tool))
        if value != "any"
    ] + ([f"at least {fmt.count(min_tokens)} tokens"] if min_tokens else [])
    if frame.empty:
        ui.empty_state(in_effect + ([f"search {ui.literal(search)}"] if search else []))
        return
    total = len(frame) if total is None else int(total)
    first = (page_number - 1) * LIMIT
    st.caption(
        f"{fmt.count(total)} runs ({ui.describe(shared)}"
        + "".join(f", {f}" for f in in_effect)
        + (f", matching {ui.literal(search)}" if search else "")
        + ")"
        + (f"; rows {fmt.count(first + 1)}–{fmt.count(first + len(frame))}, newest first" if total > len(frame) else "")
        + ". Click a run to open its timeline."
    )
    own = {"tool": params["tool"], "min_tokens": params["min_tokens"], "q": params["q"]}
    _chart(shared, frame, own, chosen_status, chosen_reason, color, complete=total <= len(frame))
    table = frame.assign(
        run=[fmt.short_id(t) for t in frame["trace_id"]],
        duration=[fmt.duration(v) for v in frame["duration_ms"]],
        cost=[fmt.money(c, u, precise=True) for c, u in zip(frame["cost_usd"], frame["unpriced_calls"], strict=False)],
    )[COLUMNS]
    ui.run_table(
        table,
        _config(),
        key="runs_table",
        colored={"status": "status", "termination_reason": "termination_reason"},
        pinned=False,
    )
    pages = max(1, -(-total // LIMIT))
    if pages > 1:
        left, _right = st.columns([1, 4])
        left.number_input(
            f"Page (of {fmt.count(pages)})",
            min_value=1,
            max_value=pages,
            step=1,
            key="runs_offset",
            on_change=ui.to_url("runs_offset", "page", 1),
        )


def _chart(
    shared: filters.Filters,
    frame: pd.DataFrame,
    own: dict[str, Any],
    status: str | None,
    reason: str | None,
    color: str,
    complete: bool,
) -> None:
    """Runs over time, counted on the server over the whole window with every filter of the page
    (``/api/v1/terminations`` takes the runs list's filters); from the listed runs if that fails."""
    starts = frame["started_at"] if complete else None
    timeline = ui.run_timeline(shared, status=status, reason=reason, color=color, starts=starts, extra=own)
    if timeline is not None and not timeline[0].empty:
        counted, _bucket, window = timeline
        ui.chart(charts.runs_over_time(counted, window, color=color), key="runs_chart")
        return
    if not complete:
        st.caption("No chart over time for these filters: the runs listed are not all of those matching.")
        return
    start, end = shared.window()
    low, high = frames.fitted_window(frame["started_at"], frame["started_at"], (start, end))
    bucket = filters.bucket_seconds(max((high - low).total_seconds(), 60))
    counted = frames.runs_per_bucket(frame, bucket, color=color)
    low, high = frames.fitted_window(counted["bucket"], counted["bucket_end"], (start, end))
    ui.chart(charts.runs_over_time(counted, (low, high), color=color), key="runs_chart")


st.title("Runs")
ui.live(body)
