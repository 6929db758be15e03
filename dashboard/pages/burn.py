"""Token burn: the replayed-history curve per agent with its growth exponent, tokens and money per successful
run, spent on runs that ended without an answer, the prompt cache's share and what it saved, and the top runs
by tokens with their cost."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from loopsight.dashboard import charts, filters, frames, ui
from loopsight.dashboard import format as fmt

AGENT_COLUMNS = [
    "agent",
    "runs",
    "growth_exponent",
    "superlinear",
    "tokens_per_success",
    "tokens_on_failures",
    "cost_usd",
    "cost_per_success_usd",
    "cost_on_failures_usd",
    "cache_hit_ratio",
    "cache_saved_usd",
]
MONEY = ("cost_usd", "cost_per_success_usd", "cost_on_failures_usd", "cache_saved_usd")
TOP_RUNS = 50


def body() -> None:
    shared = filters.current()
    params = shared.params()
    burn = ui.load("burn", what="Token burn", limit=TOP_RUNS, **params)
    if burn is None:
        return
    agents = pd.DataFrame(burn.get("agents") or [])
    runs = pd.DataFrame(burn.get("runs") or [])
    if agents.empty and runs.empty:
        ui.empty_state()
        return
    if not agents.empty:
        st.subheader("Per agent")
        superlinear = agents[agents.get("superlinear", pd.Series(False, index=agents.index)).fillna(False).astype(bool)]
        for name in superlinear.get("agent", []):
            st.warning(
                f"{ui.literal(name)}: input tokens grow superlinearly with the step (replayed history).",
                icon=":material/local_fire_department:",
            )
        shown = agents[[c for c in AGENT_COLUMNS if c in agents]].copy()
        for column in ("tokens_per_success", "tokens_on_failures"):
            if column in shown:
                shown[column] = [fmt.tokens(v) for v in shown[column]]
        if "growth_exponent" in shown:
            shown["growth_exponent"] = [fmt.number(v, 2) for v in shown["growth_exponent"]]
        unpriced = agents["unpriced_calls"] if "unpriced_calls" in agents else pd.Series(0, index=agents.index)
        for column in MONEY:
            if column in shown:
                shown[column] = [fmt.money(v, u, precise=True) for v, u in zip(shown[column], unpriced, strict=False)]
        if "cache_hit_ratio" in shown:
            shown["cache_hit_ratio"] = [fmt.pct(v) for v in shown["cache_hit_ratio"]]
        ui.table(
            shown,
            {
                "agent": st.column_config.TextColumn("agent", width=200),
                "runs": st.column_config.NumberColumn("runs", format="%,d"),
                "superlinear": st.column_config.CheckboxColumn(
                    "superlinear", help="input tokens grow faster than linearly with the step"
                ),
                "growth_exponent": st.column_config.TextColumn(
                    "growth exponent", help="input tokens ∝ step^exponent; above 1 is superlinear"
                ),
                "tokens_per_success": st.column_config.TextColumn("tokens per successful run"),
                "tokens_on_failures": st.column_config.TextColumn("tokens on failed runs"),
                "cost_usd": st.column_config.TextColumn("cost", help="its priced model calls (docs/cost.md)"),
                "cost_per_success_usd": st.column_config.TextColumn(
                    "cost per success", help="over the successful runs that have a price"
                ),
                "cost_on_failures_usd": st.column_config.TextColumn(
                    "cost on failed runs", help="runs that did not succeed"
                ),
                "cache_hit_ratio": st.column_config.TextColumn(
                    "cache hit ratio", help="input tokens served from the provider's prompt cache / input tokens"
                ),
                "cache_saved_usd": st.column_config.TextColumn(
                    "cache saved",
                    help="cached input at the input price less its cached price, less the cache writes' premium",
                ),
            },
        )
        if "unpriced_calls" in agents and agents["unpriced_calls"].fillna(0).sum():
            st.caption(
                f"{fmt.count(int(agents['unpriced_calls'].fillna(0).sum()))} model calls have no price "
                "(left out of the costs, never counted as $0): give their models a price file (docs/cost.md)."
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
            ui.chart(
                charts.burn_curve(curve_frame.rename(columns={value: "input_tokens"}), ui.agent_names(shared)),
            )
            st.caption("The mean input tokens of each step over the window's runs, per agent.")
    if not runs.empty:
        st.subheader("Top runs by tokens")
        runs["tokens"] = runs.get("input_tokens", 0) + runs.get("output_tokens", 0)
        top = runs.sort_values("tokens", ascending=False).head(TOP_RUNS)
        top = top.assign(run=[fmt.short_id(t) for t in top["trace_id"]])
        for column in ("cost_usd", "wasted_cost_usd"):
            if column in top:
                top[column.removesuffix("_usd")] = [fmt.usd(v, precise=True) for v in top[column]]
        columns = [
            c
            for c in [
                "trace_id",
                "run",
                "agent",
                "tokens",
                "input_tokens",
                "output_tokens",
                "cost",
                "wasted_tokens",
                "wasted_cost",
            ]
            if c in top
        ]
        ui.run_table(
            top[columns],
            {
                "run": st.column_config.TextColumn("run", width=105, help="Click a row to open the run."),
                "agent": st.column_config.TextColumn("agent", width=200),
                "tokens": st.column_config.NumberColumn("tokens", format="%,d"),
                "input_tokens": st.column_config.NumberColumn("input", format="%,d"),
                "output_tokens": st.column_config.NumberColumn("output", format="%,d"),
                "wasted_tokens": st.column_config.NumberColumn("tokens after a loop began", format="%,d"),
                "cost": st.column_config.TextColumn("cost", help="a dash: no priced model call"),
                "wasted_cost": st.column_config.TextColumn("cost after a loop began"),
            },
            key="burn_table",
            column_order=[c for c in columns if c != "trace_id"],
            pinned=False,
        )


st.title("Token burn")
ui.live(body)
