"""Stalls: slow calls against their tool's usual latency, retry backoff, idle gaps, and runs stuck now,
each with its agent."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from loopsight.dashboard import charts, filters, ui
from loopsight.dashboard import format as fmt
from loopsight.dashboard.colors import STALL_LABELS

COLUMNS = ["trace_id", "run_id", "span_id", "kind", "tool", "duration_ms", "expected_ms"]
KIND_LABELS = STALL_LABELS


def _table(frame: pd.DataFrame, key: str) -> None:
    table = frame.assign(
        run=[fmt.short_id(t) for t in frame["trace_id"]],
        duration=[fmt.duration(v) for v in frame["duration_ms"]],
        usual=[fmt.duration(v) for v in frame["expected_ms"]],
        slower=[
            fmt.ratio(d / e) if not fmt.missing(e) and e and not fmt.missing(d) else fmt.MISSING
            for d, e in zip(frame["duration_ms"], frame["expected_ms"], strict=False)
        ],
        agent=[fmt.text(a) for a in frame["agent"]],
        tool=[fmt.text(t) for t in frame["tool"]],
    )
    ui.run_table(
        table[["trace_id", "run", "agent", "kind", "tool", "duration", "usual", "slower", "duration_ms"]],
        {
            "run": st.column_config.TextColumn("run", width=105, help="Click a row to open the run."),
            "agent": st.column_config.TextColumn("agent", width=150),
            "kind": st.column_config.TextColumn("kind", width=110),
            "tool": st.column_config.TextColumn("tool or span", width=220),
            "duration": st.column_config.TextColumn("duration", width=90),
            "usual": st.column_config.TextColumn(
                "usual", width=90, help="the p95 a call is judged against; the gap or silence threshold"
            ),
            "slower": st.column_config.TextColumn("× usual", width=70),
        },
        key=key,
        colored={"kind": "stall_label"},
        column_order=["run", "agent", "kind", "tool", "duration", "usual", "slower"],
        pinned=False,
    )


def stuck_now(shared: filters.Filters) -> None:
    st.subheader("Stuck now")
    stalls = ui.load("stalls", what="Stuck runs", kind="stuck", agent=shared.agent, service=shared.service)
    if stalls is None:
        return
    frame = ui.with_agents(stalls, shared.agent)
    frame = frame if len(frame) else pd.DataFrame(columns=[*COLUMNS, "agent"])
    stuck = frame[frame["kind"] == "stuck"]
    if stuck.empty:
        st.success("No run is stuck right now.", icon=":material/check_circle:")
    else:
        st.warning(f"{len(stuck)} run(s) in flight with no progress.", icon=":material/hourglass_top:")
        _table(stuck.assign(kind=stuck["kind"].map(lambda k: KIND_LABELS.get(k, k))), "stuck_table")
        st.caption("A stuck run's agent is known once its run span arrives (—).")
    st.caption(ui.refresh_caption())


def body() -> None:
    shared = filters.current()
    stuck_now(shared)
    answer = ui.load("stalls_page", what="Stalls", **shared.params())
    if answer is None:
        return
    frame = ui.with_agents(answer.get("stalls") or [], shared.agent)
    frame = frame if len(frame) else pd.DataFrame(columns=[*COLUMNS, "agent"])
    past = frame[frame["kind"] != "stuck"]
    st.subheader("Stalls in this window")
    counts = {k: int(n) for k, n in (answer.get("counts") or {}).items() if k != "stuck"}
    if past.empty:
        if ui.fetch("runs", limit=1, **shared.params()):
            st.success("No stalls in this window.", icon=":material/check_circle:")
        else:
            ui.empty_state()
        return
    past = past.assign(kind=past["kind"].map(lambda k: KIND_LABELS.get(k, k)), tool=past["tool"].fillna("(run)"))
    left, right = st.columns(2)
    with left:
        st.caption("Time lost by kind and tool")
        ui.chart(
            charts.bar_by(
                past.assign(seconds=past["duration_ms"] / 1000),
                "tool",
                "seconds",
                color="kind",
                meaning="stall_label",
                title="seconds stalled",
                value_format=",.1f",
            ),
        )
    with right:
        st.caption("Count by kind, over the whole window")
        by_kind = (
            pd.DataFrame({"kind": [KIND_LABELS.get(k, k) for k in counts], "n": list(counts.values())})
            if counts
            else past.assign(n=1)
        )
        ui.chart(charts.bar_by(by_kind, "kind", "n", color="kind", meaning="stall_label", title="stalls"))
    listed, total = len(past), sum(counts.values())
    if total > listed:
        st.caption(
            f"{fmt.count(total)} stalls in the window; the time lost and the table cover the {fmt.count(listed)} listed."
        )
    _table(past.sort_values("duration_ms", ascending=False), "stalls_table")


st.title("Stalls")
ui.live(body)
