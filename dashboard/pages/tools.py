"""Tools: calls, fail rate by error class, retries and p50/p95 latency per tool and agent,
worst first by the fail rate the calls show at least."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from loopsight.dashboard import charts, filters, frames, ui
from loopsight.dashboard import format as fmt


def body() -> None:
    shared = filters.current()
    tools = ui.tools(**shared.params())
    if tools is None:
        return
    frame = pd.DataFrame(tools)
    if frame.empty:
        ui.empty_state()
        return
    by_agent = ui.tools(by_agent=True, **shared.params())
    table = pd.DataFrame(by_agent) if by_agent else frame.assign(agent=fmt.MISSING)
    if "agent" not in table:
        table["agent"] = fmt.MISSING
    st.caption(f"{fmt.count(len(frame))} tools, {fmt.count(int(frame['calls'].sum()))} calls ({ui.describe(shared)})")
    left, right = st.columns(2)
    with left:
        st.subheader("Failures by error class")
        by_class = pd.DataFrame(
            [
                {"tool": t["tool"], "error_class": c, "errors": n}
                for t in tools
                for c, n in (t.get("errors_by_class") or {}).items()
            ],
            columns=["tool", "error_class", "errors"],
        )
        if by_class.empty:
            st.caption("No failed tool calls.")
        else:
            ui.chart(charts.bar_by(by_class, "tool", "errors", color="error_class", meaning="error_class"))
    with right:
        st.subheader("Latency")
        ui.chart(charts.latency(frame))
    st.subheader("Per tool and agent")
    table = table.assign(
        fail_bound=[frames.wilson_lower(e or 0, c or 0) for e, c in zip(table["errors"], table["calls"], strict=False)],
        errors_by_class=[
            ", ".join(f"{k}: {v}" for k, v in (d or {}).items()) or fmt.MISSING
            for d in table.get("errors_by_class", [None] * len(table))
        ],
        agent=[fmt.text(a) for a in table["agent"]],
        p50=[fmt.duration(v) for v in table["p50_ms"]],
        p95=[fmt.duration(v) for v in table["p95_ms"]],
        after_failures=[fmt.usd(v, precise=True) for v in table.get("cost_after_failures_usd", [None] * len(table))],
    ).sort_values(["fail_bound", "calls"], ascending=False)
    table["at_least"] = [fmt.pct(v) for v in table["fail_bound"]]
    ui.table(
        table[
            [
                "tool",
                "agent",
                "calls",
                "errors",
                "fail_rate",
                "at_least",
                "errors_by_class",
                "retries",
                "p50",
                "p95",
                "after_failures",
            ]
        ],
        {
            "tool": st.column_config.TextColumn("tool", width=160),
            "agent": st.column_config.TextColumn("agent", width=135),
            "calls": st.column_config.NumberColumn("calls", format="%,d", width=65),
            "errors": st.column_config.NumberColumn("errors", format="%,d", width=60),
            "fail_rate": st.column_config.ProgressColumn(
                "fail rate", min_value=0, max_value=1, format="percent", width=110
            ),
            "at_least": st.column_config.TextColumn(
                "at least",
                width=70,
                help="The lower end of the 95 % confidence interval of the fail rate (Wilson): "
                "the table is sorted by it, so a tool that failed its only call ranks below one failing often.",
            ),
            "errors_by_class": st.column_config.TextColumn("errors by class", width=170),
            "retries": st.column_config.NumberColumn("retries", format="%,d", width=60),
            "p50": st.column_config.TextColumn("p50", width=70),
            "p95": st.column_config.TextColumn("p95", width=70),
            "after_failures": st.column_config.TextColumn(
                "cost after failures",
                width=110,
                help="what the model turns that read a failure of the tool cost (the step after it); a dash: unpriced",
            ),
        },
    )
    st.caption(
        "Worst first by the fail rate the calls show at least (95 % Wilson lower bound): "
        "few calls are not enough to rank a tool high."
    )


st.title("Tools")
ui.live(body)
