"""Compare two runs side by side: their tiles, their steps (tool calls, tokens) and the first step
where they diverge. ``?a=<trace_id>&b=<trace_id>``; without ``b``, run A's agent's newest
successful run (a looping run against a good run of the same agent)."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import streamlit as st

from loopsight.dashboard import charts, filters, frames, ui
from loopsight.dashboard import format as fmt

HEX = re.compile(r"^[0-9a-f]{32}$")
PICK_LIMIT = ui.PICK_LIMIT
TILES = [
    ("status", "status", lambda r: str(r.get("status") or fmt.MISSING)),
    ("termination", "termination", lambda r: str(r.get("termination_reason") or fmt.MISSING)),
    ("steps", "steps", lambda r: fmt.count(r.get("steps"))),
    ("tool calls", "tool_calls", lambda r: fmt.count(r.get("tool_calls"))),
    ("tool errors", "tool_errors", lambda r: fmt.count(r.get("tool_errors"))),
    ("loops", "loops", lambda r: fmt.count(r.get("loops"))),
    (
        "tokens",
        "tokens",
        lambda r: fmt.tokens((r.get("input_tokens") or 0) + (r.get("output_tokens") or 0), compact=True),
    ),
    ("duration", "duration_ms", lambda r: fmt.duration(r.get("duration_ms"))),
]


def _label(run: dict[str, Any]) -> str:
    return (
        f"{fmt.timestamp(run.get('started_at'), label=False)} · {run.get('agent') or '?'} · "
        f"{run.get('status') or ''} {run.get('termination_reason') or ''} · {run['trace_id']}"
    )


def _chosen(name: str) -> str | None:
    value = (st.query_params.get(name) or "").strip().lower()
    return value if HEX.match(value) else None


def _set(name: str) -> None:
    picked = st.session_state.get(f"compare_pick_{name}")
    if picked:
        st.query_params[name] = picked


def _picker(name: str, current: str | None, runs: list[dict[str, Any]], extra: dict[str, Any] | None) -> None:
    labels = {r["trace_id"]: _label(r) for r in runs}
    if extra and extra["trace_id"] not in labels:
        labels = {extra["trace_id"]: _label(extra), **labels}
    if current and current not in labels:
        labels = {current: current, **labels}
    st.session_state[f"compare_pick_{name}"] = current
    st.selectbox(
        f"Run {name.upper()}",
        list(labels),
        key=f"compare_pick_{name}",
        format_func=lambda t: labels.get(t, t),
        on_change=_set,
        args=(name,),
        placeholder="type to search by time, agent, reason or trace id",
    )


def _detail(trace_id: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    detail = ui.load("run", trace_id, what=f"Run {trace_id}") or {}
    runs = detail.get("runs") or []
    return (runs[0] if runs else None), detail.get("spans") or []


def _good_run_of(agent: str | None, other_than: str) -> str | None:
    """The newest successful run of ``agent`` (the sidebar's window first, then all time)."""
    if not agent:
        return None
    for since in (filters.current().since(), None):
        found = ui.fetch_quiet("runs", agent=agent, status="ok", limit=5, since=since) or []
        for run in found:
            if run["trace_id"] != other_than:
                return run["trace_id"]
    return None


def body() -> None:
    st.title("Compare runs")
    a, b = _chosen("a"), _chosen("b")
    run_a, spans_a = _detail(a) if a else (None, [])
    if a and not b:
        b = _good_run_of((run_a or {}).get("agent"), a)
        if b:
            st.query_params["b"] = b
    shared = filters.current()
    agent = (run_a or {}).get("agent") or shared.agent
    runs = ui.fetch_quiet("runs", limit=PICK_LIMIT, **{**shared.params(), "agent": agent}) or []
    left, right = st.columns(2)
    with left:
        _picker("a", a, runs, run_a)
    run_b, spans_b = _detail(b) if b else (None, [])
    with right:
        _picker("b", b, runs, run_b)
    st.caption(
        f"Runs of {ui.literal(agent) if agent else 'every agent'} ({ui.describe(shared)}), newest first; "
        "without a run B, the newest successful run of run A's agent is taken."
    )
    if a and not b and run_a:
        st.info(
            f"No successful run of {ui.literal(run_a.get('agent') or 'this agent')} found to compare with: pick run B.",
            icon=":material/search:",
        )
        return
    if not a or not b:
        st.info("Pick the two runs to compare (or open one from its timeline: Compare with another run).")
        return
    if not spans_a or not spans_b:
        missing = [name for name, spans in (("A", spans_a), ("B", spans_b)) if not spans]
        st.warning(f"No spans stored for run {' and '.join(missing)}.", icon=":material/search:")
        return
    tiles(run_a, run_b)
    steps(spans_a, spans_b)


def tiles(run_a: dict[str, Any] | None, run_b: dict[str, Any] | None) -> None:
    for name, run, other in (("A", run_a, run_b), ("B", run_b, run_a)):
        if run is None:
            st.caption(f"Run {name}: its run span has not arrived (in flight?).")
            continue
        st.markdown(f"**Run {name}** · {ui.literal(run.get('agent') or '?')} · {ui.literal(run['trace_id'])}")
        cols = st.columns([0.8, 2.2, 0.6, 0.8, 0.8, 0.6, 0.8, 0.9])
        for col, (label, key, show) in zip(cols, TILES, strict=False):
            delta = None
            if other is not None and name == "A" and key not in ("status", "termination"):
                mine, theirs = _number(run, key), _number(other, key)
                if mine is not None and theirs is not None and mine != theirs:
                    delta = f"{fmt.delta(mine - theirs, 'ms' if key == 'duration_ms' else 'count')} vs B"
            col.metric(label, show(run), delta, delta_color="inverse" if delta else "off")
        col_link = st.columns([4, 1])[1]
        col_link.page_link(ui.page("run"), label=f"Open run {name}", query_params={"run": run["trace_id"]})


def _number(run: dict[str, Any], key: str) -> float | None:
    if key == "tokens":
        return float((run.get("input_tokens") or 0) + (run.get("output_tokens") or 0))
    value = run.get(key)
    return None if value is None or fmt.missing(value) else float(value)


def steps(spans_a: list[dict[str, Any]], spans_b: list[dict[str, Any]]) -> None:
    merged, diverged = frames.compare_steps(frames.step_signatures(spans_a), frames.step_signatures(spans_b))
    st.subheader("Step by step")
    if diverged is None:
        st.success("The two runs made the same tool calls at every step.", icon=":material/check_circle:")
    else:
        row = merged[merged["step"] == diverged].iloc[0]
        st.warning(
            f"They diverge at step {diverged}: run A called {ui.literal(row['calls A'])}, "
            f"run B {ui.literal(row['calls B'])}.",
            icon=":material/call_split:",
        )
    long = pd.concat(
        [
            merged[["step", "tokens A"]].rename(columns={"tokens A": "tokens"}).assign(run="A"),
            merged[["step", "tokens B"]].rename(columns={"tokens B": "tokens"}).assign(run="B"),
        ]
    )
    ui.chart(charts.compare_steps(long, diverged))
    shown = merged.assign(same=["=" if s else "≠" for s in merged["same"]])
    ui.table(
        shown[["step", "same", "calls A", "tokens A", "errors A", "calls B", "tokens B", "errors B"]],
        {
            "step": st.column_config.NumberColumn("step", format="%d", width=50),
            "same": st.column_config.TextColumn("same calls", width=70),
            "calls A": st.column_config.TextColumn("run A: tool calls (args hash)", width=255),
            "tokens A": st.column_config.NumberColumn("tokens A", format="%,d", width=75),
            "errors A": st.column_config.NumberColumn("errors A", format="%,d", width=65),
            "calls B": st.column_config.TextColumn("run B: tool calls (args hash)", width=255),
            "tokens B": st.column_config.NumberColumn("tokens B", format="%,d", width=75),
            "errors B": st.column_config.NumberColumn("errors B", format="%,d", width=65),
        },
        max_rows=40,
    )
    st.caption("A step is one model turn and the tool calls it asked for; ✗ marks a call that failed.")


ui.live(body)
