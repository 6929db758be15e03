"""Run timeline: one run's spans as a waterfall with error/retry/loop markers, tokens per step
and a span detail panel. Deep link: ``?run=<trace_id>``; the picker opens any other run."""

from __future__ import annotations

import re

import streamlit as st

from loopsight.attributes import TERMINATION_REASONS
from loopsight.dashboard import charts, filters, frames, ui

HEX = re.compile(r"^[0-9a-fA-F]{32}$")
PICK_LIMIT = 500


def _open_picked() -> None:
    """Open the run chosen in the picker, and leave the picker empty for the next choice."""
    picked = st.session_state.get("run_pick")
    if picked:
        st.query_params["run"] = picked
    st.session_state["run_pick"] = None


def _open_typed() -> None:
    """Open the trace id typed (or pasted) into the picker."""
    typed = (st.session_state.get("run_trace_id") or "").strip().lower()
    if HEX.match(typed):
        st.query_params["run"] = typed
        st.session_state["run_trace_id"] = ""


def run_picker() -> None:
    """Choose a run: the newest in the sidebar's window and agent, narrowed by status and termination,
    searchable by any part of its label (the trace id too), or opened by a pasted trace id."""
    shared = filters.current()
    status_col, reason_col, id_col = st.columns([1, 1.4, 2.4])
    status = status_col.selectbox("Status", ["any", "ok", "error"], key="pick_status")
    reason = reason_col.selectbox("Termination reason", ["any", *TERMINATION_REASONS], key="pick_reason")
    typed = id_col.text_input(
        "Trace id", key="run_trace_id", on_change=_open_typed, placeholder="paste a trace id (32 hex characters)"
    )
    if typed.strip() and not HEX.match(typed.strip()):
        id_col.caption(f"{ui.literal(typed.strip()[:80])} is not a trace id (32 hex characters).")
    runs = ui.load(
        "runs",
        what="Runs",
        limit=PICK_LIMIT,
        status=None if status == "any" else status,
        termination_reason=None if reason == "any" else reason,
        **shared.params(),
    )
    if runs is None:
        return
    if not runs:
        ui.empty_state(
            [
                f"{label} {ui.literal(value)}"
                for label, value in (("status", status), ("termination", reason))
                if value != "any"
            ]
        )
        return
    labels = {
        r["trace_id"]: f"{(r.get('started_at') or '')[:19].replace('T', ' ')} · {r.get('agent') or '?'} · "
        f"{r.get('status') or ''} {r.get('termination_reason') or ''} · {r['trace_id']}"
        for r in runs
    }
    st.selectbox(
        "Run",
        [None, *labels],
        format_func=lambda t: "…" if t is None else labels[t],
        key="run_pick",
        on_change=_open_picked,
        placeholder="type to search by time, agent, reason or trace id",
    )
    st.caption(
        f"{len(labels)} runs ({ui.describe(shared)}), newest first"
        + (
            f"; only the newest {PICK_LIMIT}: narrow the filters or the sidebar's time range and agent, "
            "or paste a trace id"
            if len(runs) >= PICK_LIMIT
            else ""
        )
        + "."
    )


st.title("Run timeline")
trace_id = (st.query_params.get("run") or "").strip().lower()

if not trace_id:
    st.caption("Pick a run (or open a link ending in ?run=<trace id>).")
    run_picker()
    st.stop()

with st.expander("Open another run"):
    run_picker()

if not HEX.match(trace_id):
    st.error(f"{ui.literal(trace_id[:80])} is not a trace id (32 hex characters).", icon=":material/warning:")
    st.page_link(ui.page("runs"), label="Back to the runs")
    st.stop()

detail = ui.load("run", trace_id, what="This run")
if detail is None:
    st.stop()
spans = detail.get("spans") or []
runs = detail.get("runs") or []
if not spans:
    st.warning(
        f"No spans stored for trace {trace_id}. It may be older than the retention, or not exported yet.",
        icon=":material/search:",
    )
    st.page_link(ui.page("runs"), label="Back to the runs")
    st.stop()

run = runs[0] if runs else None
if run:
    st.subheader(
        f"{ui.literal(run.get('agent') or 'unknown agent')} · {ui.literal(run.get('service') or '')}", anchor=False
    )
    cols = st.columns([1, 2.2, 0.7, 1.1, 1, 1, 0.8, 0.8])
    cols[0].metric("status", str(run.get("status")))
    cols[1].metric("termination", str(run.get("termination_reason") or "–"))
    cols[2].metric("steps", run.get("steps", 0))
    cols[3].metric("tokens", f"{(run.get('input_tokens') or 0) + (run.get('output_tokens') or 0):,}")
    cols[4].metric("duration", f"{(run.get('duration_ms') or 0) / 1000:,.2f} s")
    cols[5].metric("tool errors", run.get("tool_errors", 0))
    cols[6].metric("retries", run.get("retries", 0))
    cols[7].metric("loops", run.get("loops", 0))
    if len(runs) > 1:
        st.caption(f"This trace holds {len(runs)} runs; the waterfall shows all of their spans.")
else:
    st.info(
        "The run span of this trace has not arrived yet (the run is in flight, or its exporter lost it); "
        "showing the spans received so far.",
        icon=":material/hourglass_top:",
    )
st.caption(f"trace {trace_id} · {len(spans)} spans")

bars, markers = frames.waterfall_frames(spans)
if len(spans) > len(bars):
    st.caption(f"Showing the first {len(bars)} of {len(spans)} spans.")
st.altair_chart(charts.waterfall(bars, markers), width="stretch")

left, right = st.columns([2, 3])
with left:
    st.subheader("Tokens per step")
    tokens = frames.tokens_per_step(spans)
    if tokens.empty:
        st.caption("No model calls in this run.")
    else:
        st.altair_chart(charts.tokens_per_step(tokens), width="stretch")
with right:
    st.subheader("Span detail")
    by_id = {s["span_id"]: s for s in spans}
    ordered = list(bars["span_id"])
    options = frames.span_options(bars)
    chosen = st.selectbox(
        "Span",
        ordered,
        index=frames.default_span(bars),
        key=f"span_pick_{trace_id}",
        format_func=lambda span_id: options.get(span_id, span_id),
    )
    st.dataframe(
        frames.span_detail(by_id[chosen]),
        hide_index=True,
        width="stretch",
        column_config={"value": st.column_config.TextColumn("value", width="large")},
    )
