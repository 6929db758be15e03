"""Tools: calls, fail rate by error class, retries and p50/p95 latency per tool."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from loopsight.dashboard import charts, filters, ui

st.title("Tools")
shared = filters.current()
tools = ui.load("tools", what="Tool statistics", **shared.params())
if tools is not None:
    frame = pd.DataFrame(tools)
    if frame.empty:
        ui.empty_state()
    else:
        st.caption(f"{len(frame)} tools, {int(frame['calls'].sum()):,} calls ({ui.describe(shared)})")
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
                st.altair_chart(charts.bar_by(by_class, "tool", "errors", color="error_class"), width="stretch")
        with right:
            st.subheader("Latency")
            st.altair_chart(charts.latency(frame), width="stretch")
        table = frame.assign(
            errors_by_class=[
                ", ".join(f"{k}: {v}" for k, v in (d or {}).items()) for d in frame.get("errors_by_class", [])
            ]
        )
        st.dataframe(
            table[
                [
                    c
                    for c in [
                        "tool",
                        "agent",
                        "calls",
                        "errors",
                        "fail_rate",
                        "errors_by_class",
                        "retries",
                        "p50_ms",
                        "p95_ms",
                    ]
                    if c in table
                ]
            ],
            hide_index=True,
            width="stretch",
            column_config={
                "fail_rate": st.column_config.ProgressColumn("fail rate", min_value=0, max_value=1, format="percent"),
                "errors_by_class": "errors by class",
                "p50_ms": st.column_config.NumberColumn("p50 (ms)", format="%.1f"),
                "p95_ms": st.column_config.NumberColumn("p95 (ms)", format="%.1f"),
            },
        )
