"""Overview: KPI tiles against the previous window, termination reasons over time, and the
top offenders of each kind (with their agent), refreshed live."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from loopsight.dashboard import charts, filters, frames, ui
from loopsight.dashboard import format as fmt
from loopsight.dashboard.colors import STALL_LABELS

# (key, label, format, lower is better)
TILES = [
    ("runs", "Runs", "count", False),
    ("success_rate", "Success rate", "rate", False),
    ("loop_rate", "Loop rate", "rate", True),
    ("tool_fail_rate", "Tool fail rate", "rate", True),
    ("tokens_per_success", "Tokens per success", "tokens", True),
    ("p95_duration_ms", "p95 run duration", "ms", True),
    ("cost_usd", "Cost", "usd", True),
    ("cost_per_success_usd", "Cost per success", "usd", True),
]
HELP = {
    "tokens_per_success": "Input + output tokens per run that completed.",
    "p95_duration_ms": "95 % of the runs took at most this long.",
    "cost_usd": "What the runs' priced model calls cost (docs/cost.md); a dash when none is priced, never $0.",
    "cost_per_success_usd": "The cost of the successful runs that have a priced call, per such run.",
}


def _format(value: float | int | None, kind: str) -> str:
    if kind == "rate":
        return fmt.pct(value)
    if kind == "ms":
        return fmt.duration(value)
    if kind == "tokens":
        return fmt.tokens(value, compact=True)
    if kind == "usd":
        return fmt.usd(value, precise=True)
    return fmt.count(value)


def _exact(value: float | int | None, kind: str) -> str:
    return fmt.tokens(value) if kind == "tokens" else _format(value, kind)


def _delta(change: float | int | None, kind: str) -> str | None:
    """The tile's change in its own unit (money as money: ``+$0.0120``)."""
    if kind == "usd":
        if change is None or fmt.missing(change):
            return None
        return ("+" if change >= 0 else "-") + fmt.usd(abs(change), precise=True)
    return fmt.delta(change, "count" if kind == "tokens" else kind)


def tiles(shared: filters.Filters) -> bool:
    """The KPI row; returns False when there are no runs at all in either window."""
    params = shared.params()
    all_time = params["since"] is None
    if all_time:
        params["since"] = ui.ALL_TIME
    answer = ui.load("overview", what="KPI tiles", **params)
    if answer is None:
        return True
    values = answer.get("tiles", answer)
    runs = values.get("runs") or {}
    # No runs in either window: nothing to compare; all time has no previous window.
    compared = bool(runs.get("value") or runs.get("previous")) and not all_time
    # Two rows of four: eight tiles in one cut their values short below ~1,900 px ("$0.…", "76.…").
    half = (len(TILES) + 1) // 2
    columns = [*st.columns(half), *st.columns(half)]
    for column, (key, label, kind, lower_better) in zip(columns, TILES, strict=False):
        tile = values.get(key) or {}
        previous = "" if all_time else f"previous window: {_exact(tile.get('previous'), kind)}"
        column.metric(
            label,
            _format(tile.get("value"), kind),
            _delta(tile.get("change"), kind) if compared else None,
            delta_color="inverse" if lower_better else "normal",
            help=" ".join(
                t for t in (HELP.get(key, ""), f"This window: {_exact(tile.get('value'), kind)}.", previous) if t
            ),
        )
    return bool(runs.get("value") or runs.get("previous"))


def terminations(shared: filters.Filters) -> None:
    st.subheader("Termination reasons over time")
    timeline = ui.run_timeline(shared, color="termination_reason")
    if timeline is None:
        return
    frame, bucket, window = timeline
    if frame.empty:
        st.caption("No runs in this window.")
        return
    ui.chart(charts.terminations_over_time(frame, end="bucket_end", window=window), key="terminations")
    st.caption(
        f"Runs in {fmt.seconds(bucket)} buckets, counted over the whole window; the axis spans the part of the "
        f"window that holds runs ({fmt.timestamp(window[0], label=False, seconds=False)} – "
        f"{fmt.timestamp(window[1], seconds=False)})."
    )


def offenders(shared: filters.Filters) -> None:
    """Four tables, two a row (four in a row cut their last columns at 1440 px), each ranked by its first column."""
    st.subheader("Top offenders")
    st.caption("Click a row to open its run.")
    params = shared.params()
    (col_tokens, col_loops), (col_stalls, col_tools) = st.columns(2), st.columns(2)
    with col_tokens:
        st.markdown("**Runs burning the most tokens**")
        burn = ui.load("burn", what="Token burn", limit=ui.TOP_SPENDERS, **params)
        if burn is not None:
            columns = ["trace_id", "agent", "input_tokens", "output_tokens", "cost_usd"]
            top = pd.DataFrame(burn.get("runs") or [], columns=columns)
            if top.empty:
                st.caption("No runs.")
            else:
                top["tokens"] = top["input_tokens"].fillna(0) + top["output_tokens"].fillna(0)
                top = top.nlargest(5, "tokens")
                top["cost"] = [fmt.usd(v, precise=True) for v in top["cost_usd"]]
                _small_table(top[["tokens", "trace_id", "agent", "cost"]], "top_tokens")
        st.page_link(ui.page("burn"), label="Token burn →")
    with col_loops:
        st.markdown("**Longest loops**")
        answer = ui.load("loops_page", what="Loops", limit=ui.LISTED_LOOPS, **params)
        if answer is not None:
            loops = answer.get("loops") or []
            if not loops:
                st.caption("No loops.")
            else:
                frame = ui.with_agents(loops, shared.agent)
                frame = frame.sort_values("count", ascending=False).head(5)
                _small_table(frame[["count", "kind", "agent", "trace_id", "tool"]], "top_loops", {"kind": "loop_kind"})
        st.page_link(ui.page("loops"), label="Loops →")
    with col_stalls:
        st.markdown("**Stalls**")
        answer = ui.load("stalls_page", what="Stalls", **params)
        if answer is not None:
            stalls = answer.get("stalls") or []
            if not stalls:
                st.caption("No stalls.")
            else:
                frame = ui.with_agents(stalls, shared.agent)
                frame = frame.sort_values("duration_ms", ascending=False).head(5)
                frame = frame.assign(kind=[STALL_LABELS.get(k, k) for k in frame["kind"]])
                _small_table(
                    frame[["duration_ms", "kind", "agent", "trace_id", "tool"]], "top_stalls", {"kind": "stall_label"}
                )
        st.page_link(ui.page("stalls"), label="Stalls →")
    with col_tools:
        st.markdown("**Failing tools**")
        tools = ui.tools(by_agent=True, **params)
        if tools is not None:
            frame = pd.DataFrame(tools, columns=["tool", "agent", "calls", "errors"] if not tools else None)
            ranked = frames.rank_failing(frame) if not frame.empty else frame
            if ranked.empty:
                st.caption("No failed tool calls.")
            else:
                top = ranked.head(5)
                shown = top.assign(
                    fail_rate=[fmt.pct(v) for v in top["fail_rate"]],
                    fail_bound=[fmt.pct(v) for v in top["fail_bound"]],
                )
                ui.table(
                    shown[["fail_rate", "tool", "agent", "calls", "fail_bound"]],
                    {
                        "fail_rate": st.column_config.TextColumn("fail rate", width=70),
                        "tool": st.column_config.TextColumn("tool", width=120),
                        "calls": st.column_config.NumberColumn("calls", width=60, format="%,d"),
                        "fail_bound": st.column_config.TextColumn(
                            "at least",
                            width=70,
                            help="The lower end of the 95 % confidence interval of the fail rate (Wilson).",
                        ),
                        "agent": st.column_config.TextColumn("agent", width=130),
                    },
                )
                st.caption(
                    "Ranked by the fail rate the calls show at least (the 95 % Wilson lower bound), "
                    "so a tool that failed its only call does not outrank one failing often over many calls."
                )
        st.page_link(ui.page("tools"), label="Tools →")


def _small_table(frame: pd.DataFrame, key: str, colored: dict[str, str] | None = None) -> None:
    """A five-row table linking each row to its run: durations as text, tokens with separators, a short run id."""
    config: dict[str, Any] = {
        "count": st.column_config.NumberColumn("repeats", width=65, format="%,d"),
        "tokens": st.column_config.NumberColumn("tokens", width=80, format="%,d"),
        "duration_ms": st.column_config.TextColumn("duration", width=80),
        "kind": st.column_config.TextColumn("kind", width=122),
        "agent": st.column_config.TextColumn("agent", width=125),
        "run": st.column_config.TextColumn("run", width=85),
        "cost": st.column_config.TextColumn("cost", width=70, help="a dash: no priced model call"),
        "tool": st.column_config.TextColumn("tool"),
    }
    shown = frame.assign(run=[fmt.short_id(t, 8) for t in frame["trace_id"]])
    if "duration_ms" in shown:
        shown["duration_ms"] = [fmt.duration(v) for v in shown["duration_ms"]]
    for column in ("agent", "tool"):
        if column in shown:
            shown[column] = [fmt.text(v) for v in shown[column]]
    # The run's id only where the row has room for it; the whole row opens the run either way.
    order = [c if c != "trace_id" else "run" for c in frame.columns if c != "trace_id" or "tool" not in frame]
    ui.run_table(shown, config, key=key, colored=colored, column_order=order, pinned=False)


def body() -> None:
    shared = filters.current()
    if not tiles(shared):
        ui.empty_state()
        return
    terminations(shared)
    offenders(shared)
    st.caption(f"{ui.describe(shared)} · {ui.refresh_caption()}")


st.title("Overview")
ui.live(body)
