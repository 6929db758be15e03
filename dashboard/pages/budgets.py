"""Budgets: what max_steps, max_tool_calls, the timeout and the token budget should be, per agent, from the
runs stored (docs/budgets.md): the recommended value of each kind (or why there is none), its curve of
successful runs cut against bad runs cut and tokens saved, the distribution per outcome, and the runs a
chosen value would cut."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from loopsight.dashboard import charts, filters, ui
from loopsight.dashboard import format as fmt

KINDS = ("steps", "tool_calls", "seconds", "tokens")
# What each kind counts, in the budget's plain terms (for producers that are not the reference loop).
PLAIN = {"steps": "model turns", "tool_calls": "tool calls", "seconds": "seconds of wall clock", "tokens": "tokens"}
UNITS = {"steps": "steps", "tool_calls": "tool calls", "seconds": "seconds", "tokens": "tokens"}
OUTCOMES = ("ok", "looped", "budget", "failed", "other")
CUT_RUNS = 100


def _value_out_of_url() -> None:
    """Another agent or budget: the link's value was one of the previous one's."""
    if "value" in st.query_params:
        del st.query_params["value"]


def value_text(kind: str, value: Any) -> str:
    """A budget value in its unit: ``8``, ``1.5 min``, ``12,000``."""
    if fmt.missing(value):
        return fmt.MISSING
    if kind == "seconds":
        return fmt.seconds(value)
    return fmt.tokens(value) if kind == "tokens" else fmt.count(value)


def tiles(agent: dict[str, Any], budgets: dict[str, dict[str, Any]]) -> None:
    cols = st.columns(len(KINDS))
    for column, kind in zip(cols, KINDS, strict=False):
        budget = budgets.get(kind) or {}
        label = budget.get("react_field") if agent.get("reference_loop") and budget.get("react_field") else PLAIN[kind]
        recommended = budget.get("recommended")
        column.metric(
            str(label),
            value_text(kind, recommended),
            help=budget.get("summary") or budget.get("reason") or None,
        )
        notes = []
        if fmt.missing(recommended) and budget.get("reason"):
            notes.append(str(budget["reason"]))
        if not fmt.missing(budget.get("configured")):
            notes.append(f"configured: {value_text(kind, budget['configured'])}")
        if notes:
            column.caption(ui.escape("; ".join(notes)))


def curves(budgets: dict[str, dict[str, Any]]) -> None:
    st.subheader("What each value would have cut")
    st.caption(
        "As the budget grows: the share of successful runs it cuts (the price), of bad runs it cuts and of the "
        "tokens the bad runs spent it saves (the gain). The dashed rule is the recommended value."
    )
    for row in (KINDS[:2], KINDS[2:]):
        for column, kind in zip(st.columns(2), row, strict=False):
            budget = budgets.get(kind) or {}
            curve = pd.DataFrame(budget.get("curve") or [])
            with column:
                st.markdown(f"**{ui.escape(PLAIN[kind])}**")
                if curve.empty:
                    st.caption("No runs to replay.")
                    continue
                ui.chart(
                    charts.budget_curve(curve, UNITS[kind], budget.get("recommended"), whole=kind != "seconds"),
                    key=f"budget_curve_{kind}",
                )


def distribution(budgets: dict[str, dict[str, Any]]) -> None:
    st.subheader("Distribution per outcome")
    rows = []
    for kind in KINDS:
        for outcome in OUTCOMES:
            figures = ((budgets.get(kind) or {}).get("distribution") or {}).get(outcome) or {}
            if not figures.get("runs"):
                continue
            rows.append(
                {
                    "budget": PLAIN[kind],
                    "outcome": outcome,
                    "runs": figures.get("runs"),
                    **{q: value_text(kind, figures.get(q)) for q in ("p50", "p90", "p99", "max")},
                }
            )
    if not rows:
        st.caption("No runs.")
        return
    ui.table(
        pd.DataFrame(rows),
        {
            "budget": st.column_config.TextColumn("budget", width=150),
            "outcome": st.column_config.TextColumn(
                "outcome", width=80, help="ok; looped, budget, failed: bad runs; other: cancelled (docs/budgets.md)"
            ),
            "runs": st.column_config.NumberColumn("runs", format="%,d", width=60),
        },
        max_rows=20,
    )


def cut_runs(agent_name: str, budgets: dict[str, dict[str, Any]], params: dict[str, Any]) -> None:
    st.subheader("The runs a budget would cut")
    kind_col, value_col = st.columns([1, 1])
    ui.from_url("budget_kind", "budget", KINDS)
    kind = str(
        kind_col.selectbox(
            "Budget",
            KINDS,
            format_func=lambda k: PLAIN[k],
            key="budget_kind",
            on_change=ui.to_url("budget_kind", "budget", KINDS[0], _value_out_of_url),
        )
    )
    budget = budgets.get(kind) or {}
    values = [p["value"] for p in budget.get("curve") or []]
    if not values:
        st.caption("No runs to replay.")
        return
    preferred = next(
        (v for v in (budget.get("recommended"), budget.get("configured")) if not fmt.missing(v) and v in values), None
    )
    default = values.index(preferred) if preferred is not None else len(values) // 2
    key = f"budget_value_{kind}"
    linked = ui.from_url(key, "value", values)  # the link's value, else the recommended one
    value = value_col.selectbox(
        "Value",
        values,
        index=None if linked is not None else default,
        format_func=lambda v: value_text(kind, v),
        key=key,
        on_change=ui.to_url(key, "value", None),
    )
    point: dict[str, Any] = next((p for p in budget.get("curve") or [] if p["value"] == value), {})
    st.caption(
        f"At {value_text(kind, value)}: {fmt.count(point.get('ok_runs_cut'))} successful runs cut "
        f"({fmt.pct(point.get('ok_cut_rate'))}), {fmt.count(point.get('bad_runs_cut'))} bad runs cut "
        f"({fmt.pct(point.get('bad_cut_rate'))}), {fmt.tokens(point.get('tokens_saved'))} tokens saved "
        f"({fmt.pct(point.get('tokens_saved_share'))} of the bad runs' tokens)"
        + (f", worth {fmt.usd(point['cost_saved_usd'], precise=True)}" if "cost_saved_usd" in point else "")
        + "."
    )
    runs = ui.load(
        "budget_runs",
        what="The runs this budget cuts",
        kind=kind,
        value=value,
        limit=CUT_RUNS,
        **{**params, "agent": agent_name},
    )
    if runs is None:
        return
    if not runs:
        st.success("This value cuts no run.", icon=":material/check_circle:")
        return
    frame = pd.DataFrame(runs)
    frame = frame.assign(
        run=[fmt.short_id(t) for t in frame["trace_id"]],
        total=[value_text(kind, v) for v in frame["total"]],
        kept=[f"{fmt.count(k)} of {fmt.count(s)}" for k, s in zip(frame["steps_kept"], frame["steps"], strict=False)],
    )
    shown = ["run", "outcome", "total", "kept", "last_step", "tokens", "tokens_saved"]
    if "cost_saved_usd" in frame:
        frame["cost_saved"] = [fmt.usd(v, precise=True) for v in frame["cost_saved_usd"]]
        shown.append("cost_saved")
    ui.run_table(
        frame[["trace_id", *shown]],
        {
            "run": st.column_config.TextColumn("run", width=105, help="Click a row to open its timeline."),
            "outcome": st.column_config.TextColumn("outcome", width=80),
            "total": st.column_config.TextColumn(
                f"total {UNITS[kind]}", width=100, help="the run's total of this budget"
            ),
            "kept": st.column_config.TextColumn("steps kept", width=90),
            "last_step": st.column_config.NumberColumn("stops at step", format="%,d", width=90),
            "tokens": st.column_config.NumberColumn("tokens", format="%,d", width=90),
            "tokens_saved": st.column_config.NumberColumn(
                "tokens saved", format="%,d", width=100, help="a successful run cut saves nothing: it loses its answer"
            ),
            "cost_saved": st.column_config.TextColumn("cost saved", width=90, help="its steps not run, priced"),
        },
        key="budget_runs_table",
        colored={"outcome": "budget_outcome"},
        column_order=shown,
        pinned=False,
    )
    if len(runs) >= CUT_RUNS:
        st.caption(f"The {fmt.count(CUT_RUNS)} runs it cuts that would save the most tokens.")


def body() -> None:
    shared = filters.current()
    params = shared.params()
    answer = ui.load("budgets", what="Budgets", **params)
    if answer is None:
        return
    agents = sorted(answer.get("agents") or [], key=lambda a: -(a.get("runs") or 0))
    if not agents:
        ui.empty_state()
        return
    names = [str(a["agent"]) for a in agents]
    if len(names) > 1:
        ui.from_url("budgets_agent", "budget_agent", names)
        chosen = str(
            st.selectbox(
                "Agent",
                names,
                key="budgets_agent",
                on_change=ui.to_url("budgets_agent", "budget_agent", None, _value_out_of_url),
            )
        )
    else:
        chosen = names[0]
    agent = next(a for a in agents if str(a["agent"]) == chosen)
    budgets = {b["kind"]: b for b in agent.get("budgets") or []}
    st.subheader(ui.literal(chosen), anchor=False)
    st.caption(
        f"{fmt.count(agent.get('runs'))} runs ({ui.describe(shared)}): {fmt.count(agent.get('ok_runs'))} successful, "
        f"{fmt.count(agent.get('looped_runs'))} looped, {fmt.count(agent.get('budget_runs'))} stopped by a budget, "
        f"{fmt.count(agent.get('failed_runs'))} failed, {fmt.count(agent.get('other_runs'))} other. "
        "Recommended: the smallest value that cuts at most 1 % of the successful runs, given 20 of them or more."
    )
    tiles(agent, budgets)
    line = fmt.react_config(list(budgets.values())) if agent.get("reference_loop") else None
    if line:
        st.markdown("As the reference loop's settings (`loopsight.react`):")
        st.code(line, language="python")
    curves(budgets)
    distribution(budgets)
    cut_runs(chosen, budgets, params)


st.title("Budgets")
ui.live(body)
