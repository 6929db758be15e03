"""Token burn: the replayed-history curve per agent with its growth exponent, tokens per successful
run, tokens spent on runs that ended without an answer, and the top runs by tokens."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from loopsight.dashboard import charts, filters, frames, ui

AGENT_COLUMNS = ["agent", "runs", "growth_exponent", "superlinear", "tokens_per_success", "tokens_on_failures"]

st.title("Token burn")
shared = filters.current()
params = shared.params()
burn = ui.load("burn", what="Token burn", **params)
if burn is not None:
    agents = pd.DataFrame(burn.get("agents") or [])
    runs = pd.DataFrame(burn.get("runs") or [])
    if agents.empty and runs.empty:
        ui.empty_state()
    else:
        if not agents.empty:
            st.subheader("Per agent")
            superlinear = agents[
                agents.get("superlinear", pd.Series(False, index=agents.index)).fillna(False).astype(bool)
            ]
            for name in superlinear.get("agent", []):
                st.warning(
                    f"{ui.literal(name)}: input tokens grow superlinearly with the step (replayed history).",
                    icon=":material/local_fire_department:",
                )
            st.dataframe(
                agents[[c for c in AGENT_COLUMNS if c in agents]],
                hide_index=True,
                width="stretch",
                column_config={
                    "superlinear": st.column_config.CheckboxColumn(
                        "superlinear", help="input tokens grow faster than linearly with the step"
                    ),
                    "growth_exponent": st.column_config.NumberColumn("growth exponent", format="%.2f"),
                    "tokens_per_success": st.column_config.NumberColumn("tokens per successful run", format="%.0f"),
                    "tokens_on_failures": st.column_config.NumberColumn("tokens on failed runs", format="%d"),
                },
            )
        st.subheader("Input tokens per step")
        curve = ui.load("burn_curve", what="Burn curve", **params)
        if curve is not None:
            curve_frame = pd.DataFrame(frames.records(curve, "curve", "points", "steps"))
            value = frames.first_column(curve_frame, "input_tokens", "avg_input_tokens", "mean_input_tokens", "tokens")
            if curve_frame.empty or value is None or "step" not in curve_frame:
                st.caption("No model calls with a step number in this window.")
            else:
                if "agent" not in curve_frame:
                    curve_frame["agent"] = "all"
                st.altair_chart(charts.burn_curve(curve_frame.rename(columns={value: "input_tokens"})), width="stretch")
        if not runs.empty:
            st.subheader("Top runs by tokens")
            runs["tokens"] = runs.get("input_tokens", 0) + runs.get("output_tokens", 0)
            top = runs.sort_values("tokens", ascending=False).head(50)
            top = top.assign(link=[ui.run_link(t) for t in top["trace_id"]])
            st.dataframe(
                top[
                    [
                        c
                        for c in ["link", "agent", "tokens", "input_tokens", "output_tokens", "wasted_tokens"]
                        if c in top
                    ]
                ],
                hide_index=True,
                width="stretch",
                column_config={
                    "link": st.column_config.LinkColumn("run", display_text=r"run\?run=(.{12})"),
                    "input_tokens": "input",
                    "output_tokens": "output",
                    "wasted_tokens": "tokens after a loop began",
                },
            )
