"""Run timeline: one run's spans as a waterfall with error/retry/loop markers (click a bar to
select its span; fold a span's sub-tree), tokens per step and the span's detail, with the
messages and tool inputs/outputs when content capture is on. Deep link: ``?run=<trace_id>``;
the picker opens any other run, "Compare" puts it beside another.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import streamlit as st

from loopsight.attributes import TERMINATION_REASONS
from loopsight.dashboard import charts, filters, frames, ui
from loopsight.dashboard import format as fmt

HEX = re.compile(r"^[0-9a-fA-F]{32}$")
PICK_LIMIT = ui.PICK_LIMIT


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


def run_label(run: dict[str, Any]) -> str:
    """A run as the pickers show it: start (UTC), agent, status and reason, trace id (all searchable)."""
    return (
        f"{fmt.timestamp(run.get('started_at'), label=False)} · {run.get('agent') or '?'} · "
        f"{run.get('status') or ''} {run.get('termination_reason') or ''} · {run['trace_id']}"
    )


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
    labels = {r["trace_id"]: run_label(r) for r in runs}
    st.selectbox(
        "Run",
        [None, *labels],
        format_func=lambda t: "…" if t is None else labels[t],
        key="run_pick",
        on_change=_open_picked,
        placeholder="type to search by time, agent, reason or trace id",
    )
    st.caption(
        f"{fmt.count(len(labels))} runs ({ui.describe(shared)}), newest first"
        + (
            f"; only the newest {fmt.count(PICK_LIMIT)}: narrow the filters or the sidebar's time range and agent, "
            "or paste a trace id"
            if len(runs) >= PICK_LIMIT
            else ""
        )
        + "."
    )


def header(trace_id: str, detail: dict[str, Any]) -> None:
    """The run's agent, tiles, whether it is stuck, and the link to compare it."""
    runs, spans = detail.get("runs") or [], detail.get("spans") or []
    run = runs[0] if runs else None
    # Only a trace the API calls stuck (its run span has not arrived) is looked up among the stuck runs.
    stuck = None
    if not run and detail.get("stuck", True):
        stalls = ui.fetch_quiet("stalls", kind="stuck") or []
        stuck = next((s for s in stalls if s.get("trace_id") == trace_id and s.get("kind") == "stuck"), None)
    if run:
        st.subheader(
            f"{ui.literal(run.get('agent') or 'unknown agent')} · {ui.literal(run.get('service') or '')}", anchor=False
        )
        # Two rows: nine tiles in one cut their values short below ~1,900 px ("$0.…", "31…").
        cols = [*st.columns([0.9, 2.3, 0.8, 1.1, 1.4]), *st.columns(5)[:4]]
        cols[0].metric("status", str(run.get("status") or fmt.MISSING))
        cols[1].metric("termination", str(run.get("termination_reason") or fmt.MISSING))
        cols[2].metric("steps", fmt.count(run.get("steps")))
        tokens = (run.get("input_tokens") or 0) + (run.get("output_tokens") or 0)
        cols[3].metric(
            "tokens",
            fmt.tokens(tokens, compact=True),
            help=f"{fmt.tokens(run.get('input_tokens'))} in, {fmt.tokens(run.get('output_tokens'))} out",
        )
        cols[4].metric(
            "cost",
            fmt.money(run.get("cost_usd"), run.get("unpriced_calls"), precise=True),
            help=_cost_help(run),
        )
        cols[5].metric("duration", fmt.duration(run.get("duration_ms")))
        cols[6].metric("tool errors", fmt.count(run.get("tool_errors")))
        cols[7].metric("retries", fmt.count(run.get("retries")))
        cols[8].metric("loops", fmt.count(run.get("loops")))
        if len(runs) > 1:
            st.caption(f"This trace holds {len(runs)} runs; the waterfall shows all of their spans.")
        if run.get("session_id"):
            st.page_link(
                ui.page("sessions"),
                label=f"Session {ui.literal(str(run['session_id'])[:110])}",  # a producer's value: never markdown
                icon=":material/forum:",
                query_params={"session": str(run["session_id"])},
            )
        if run.get("arguments_captured") is False:
            hint = run.get("arguments_hint")
            st.info(
                "This run's tool calls carry no arguments, so loops on repeated arguments cannot be judged."
                + (
                    f" Turn argument capture on with {ui.literal(hint)}."
                    if hint
                    else " Turn on its instrumentation's capture of tool arguments."
                ),
                icon=":material/visibility_off:",
            )
    if stuck:
        st.warning(
            f"This run is stuck: it is in flight and nothing has happened for {fmt.duration(stuck.get('duration_ms'))} "
            f"(its last span, {ui.literal(stuck.get('tool') or 'a span')}, ended that long ago; "
            f"runs count as stuck after {fmt.duration(stuck.get('expected_ms'))} of silence).",
            icon=":material/hourglass_top:",
        )
    elif not run:
        st.info(
            "The run span of this trace has not arrived yet (the run is in flight, or its exporter lost it); "
            "showing the spans received so far.",
            icon=":material/hourglass_top:",
        )
    left, right = st.columns([3, 1])
    left.caption(f"trace {trace_id} · {fmt.count(len(spans))} spans · times in UTC")
    right.page_link(
        ui.page("compare"),
        label="Compare with another run",
        icon=":material/compare_arrows:",
        query_params={"a": trace_id},
    )


def _cost_help(run: dict[str, Any]) -> str:
    parts = ["Its priced model calls (docs/cost.md); a dash when none is priced, never $0."]
    if run.get("unpriced_calls"):
        parts.append(f"{fmt.count(run['unpriced_calls'])} calls have no price and are left out.")
    if run.get("cache_read_input_tokens"):
        parts.append(f"{fmt.tokens(run['cache_read_input_tokens'])} input tokens came from the prompt cache.")
    return " ".join(parts)


def steps_table(steps: list[dict[str, Any]]) -> None:
    """Per step: its calls, failures, loop hits, tokens and cost."""
    frame = pd.DataFrame(steps)
    if frame.empty:
        return
    for column in ("step", "llm_calls", "tool_calls", "tool_errors", "retries", "loop_hits", "input_tokens"):
        if column not in frame:
            frame[column] = None
    shown = frame.assign(
        duration=[fmt.duration(v) for v in frame.get("duration_ms", [None] * len(frame))],
        cost=[fmt.usd(v, precise=True) for v in frame.get("cost_usd", [None] * len(frame))],
        step=[fmt.text(v) for v in frame["step"]],
    )
    columns = ["step", "duration", "llm_calls", "tool_calls", "tool_errors", "retries", "loop_hits"]
    columns += ["input_tokens", "output_tokens", "cost"]
    ui.table(
        shown[[c for c in columns if c in shown]],
        {
            "step": st.column_config.TextColumn("step", width=50),
            "duration": st.column_config.TextColumn("duration", width=80),
            "llm_calls": st.column_config.NumberColumn("model calls", format="%,d", width=80),
            "tool_calls": st.column_config.NumberColumn("tool calls", format="%,d", width=70),
            "tool_errors": st.column_config.NumberColumn("errors", format="%,d", width=60),
            "retries": st.column_config.NumberColumn("retries", format="%,d", width=60),
            "loop_hits": st.column_config.NumberColumn(
                "guard hits",
                format="%,d",
                width=65,
                help="calls the agent's own loop guard flagged; the loops loopsight found are listed below",
            ),
            "input_tokens": st.column_config.NumberColumn("input", format="%,d", width=75),
            "output_tokens": st.column_config.NumberColumn("output", format="%,d", width=70),
            "cost": st.column_config.TextColumn("cost", width=80, help="its priced model calls; a dash: unpriced"),
        },
        max_rows=40,
    )


def loops_table(loops: list[dict[str, Any]]) -> None:
    """The loops found in the run (as the Loops page lists them), or nothing when there are none."""
    if not loops:
        return
    st.subheader("Loops found", anchor=False)
    frame = pd.DataFrame(loops)
    shown = frame.assign(
        first_step=[fmt.text(v) for v in frame["first_step"]],
        tool=[fmt.text(v) for v in frame["tool"]],
    )
    shown = shown.assign(kind_label=[[str(k)] for k in shown["kind"]])
    columns = ["kind_label", "tool", "count", "first_step", "scope", "wasted_tokens"]
    if "wasted_cost_usd" in shown:  # a collector before the run's loops had their cost answers without it
        shown["wasted_cost"] = [fmt.usd(v, precise=True) for v in shown["wasted_cost_usd"]]
        columns.append("wasted_cost")
    ui.table(
        shown[columns],
        {
            "kind_label": ui.label_column("loop_kind", {"label": "kind", "width": 110}),
            "tool": st.column_config.TextColumn("tool", width=140),
            "count": st.column_config.NumberColumn("calls", format="%,d", width=55),
            "first_step": st.column_config.TextColumn("from step", width=70),
            "scope": st.column_config.TextColumn(
                "scope", width=70, help="session: across the runs of its session, shown on the run of its last call"
            ),
            "wasted_tokens": st.column_config.NumberColumn(
                "tokens after", format="%,d", width=90, help="model tokens spent after the loop began"
            ),
            "wasted_cost": st.column_config.TextColumn(
                "cost after", width=80, help="what those model calls cost; a dash: none of them is priced"
            ),
        },
        max_rows=20,
    )


def _fold(trace_id: str, span_ids: set[str] | None, toggle: str | None = None) -> None:
    """Fold these spans' sub-trees (``None``: unfold all), or flip one span's."""
    key = f"fold_{trace_id}"
    if toggle is not None:
        folded = set(st.session_state.get(key) or set())
        st.session_state[key] = folded - {toggle} if toggle in folded else folded | {toggle}
    else:
        st.session_state[key] = set(span_ids or set())


def _clicked(trace_id: str) -> None:
    """A click on a bar: its span becomes the one shown in the detail panel."""
    selection = (st.session_state.get(f"waterfall_{trace_id}") or {}).get("selection") or {}
    picked = (selection.get(charts.SPAN_SELECTION) or [{}])[0].get("span_id")
    if picked:
        st.session_state[f"span_{trace_id}"] = picked


def waterfall(trace_id: str, spans: list[dict[str, Any]]) -> tuple[Any, Any]:
    """The waterfall; a click on a bar selects its span (kept in the session). Returns (bars, chosen span id)."""
    state = st.session_state
    chosen_key, fold_key = f"span_{trace_id}", f"fold_{trace_id}"
    folded: set[str] = state.get(fold_key) or set()
    bars, markers = frames.waterfall_frames(spans, collapsed=folded, chosen=state.get(chosen_key))
    if chosen_key not in state and len(bars):
        # The first view of this run (nothing folded yet): open on its first flagged span.
        state[chosen_key] = bars["span_id"].iloc[frames.default_span(bars)]
        bars["chosen"] = bars["span_id"] == state[chosen_key]
    counts = dict(zip(bars["span_id"], bars["children"], strict=False))
    counts = {span_id: n for span_id, n in counts.items() if n}
    controls = st.columns([1.2, 1.2, 5], vertical_alignment="center")
    controls[0].button(
        "Collapse all",
        key=f"fold_all_{trace_id}",
        disabled=not counts or set(counts) <= folded,
        on_click=_fold,
        args=(trace_id, set(counts)),
    )
    controls[1].button(
        "Expand all",
        key=f"unfold_all_{trace_id}",
        disabled=not folded,
        on_click=_fold,
        args=(trace_id, None),
    )
    hidden = len(spans) - len(bars)
    controls[2].caption(
        "Click a bar to see its span below; fold a span's sub-tree from its detail."
        + (f" {fmt.count(hidden)} spans folded away." if folded and hidden else "")
        + (
            f" Showing the first {fmt.count(len(bars))} of {fmt.count(len(spans))} spans."
            if hidden and not folded
            else ""
        )
    )
    ui.chart(
        charts.waterfall(bars, markers),
        key=f"waterfall_{trace_id}",
        on_select=lambda: _clicked(trace_id),
        selection_mode=charts.SPAN_SELECTION,
    )
    return bars, state.get(chosen_key)


def _pick_span(trace_id: str) -> None:
    st.session_state[f"span_{trace_id}"] = st.session_state[f"span_pick_{trace_id}"]


def span_detail(trace_id: str, spans: list[dict[str, Any]], bars: Any, chosen: str | None) -> None:
    """The chosen span: its fields, its captured content, its attributes and events, all shown at full height."""
    by_id = {s["span_id"]: s for s in spans}
    ordered = [s for s in bars["span_id"] if s in by_id]
    if not ordered:
        return
    if chosen not in ordered:
        chosen = ordered[0]
    options = frames.span_options(bars)
    pick_key = f"span_pick_{trace_id}"
    st.session_state[pick_key] = chosen
    st.selectbox(
        "Span",
        ordered,
        key=pick_key,
        format_func=lambda span_id: options.get(span_id, span_id),
        on_change=_pick_span,
        args=(trace_id,),
    )
    span = by_id[chosen]
    children = int(bars.loc[bars["span_id"] == chosen, "children"].max() or 0)
    folded: set[str] = st.session_state.get(f"fold_{trace_id}") or set()
    if children:
        is_folded = chosen in folded
        st.button(
            f"Expand its {children} spans" if is_folded else f"Collapse its {children} spans",
            key=f"fold_one_{trace_id}",
            icon=":material/unfold_more:" if is_folded else ":material/unfold_less:",
            on_click=_fold,
            args=(trace_id, None, chosen),
        )
    error = " / ".join(str(v) for v in (span.get("error_type"), span.get("error_class")) if v)
    facts = [
        f"**{ui.escape(span.get('kind') or 'span')}**",
        f"status {ui.literal(span.get('status') or fmt.MISSING)}",
        f"took {fmt.duration(span.get('duration_ms'))}",
        f"step {fmt.text(span.get('step'))}",
    ]
    if span.get("tool"):
        facts.append(f"tool {ui.literal(span['tool'])}")
    if error:
        facts.append(f"error {ui.literal(error)}")
    if not fmt.missing(span.get("input_tokens")) or not fmt.missing(span.get("output_tokens")):
        facts.append(f"tokens {fmt.tokens(span.get('input_tokens'))} in / {fmt.tokens(span.get('output_tokens'))} out")
    if span.get("kind") == "llm":
        facts.append(f"cost {fmt.usd(span.get('cost_usd'), precise=True)}")
    st.markdown(" · ".join(facts))
    content = frames.span_content(span)
    for title, key, text in content:
        st.markdown(f"**{ui.escape(title)}** {ui.literal(key)}")
        st.code(text, language="json" if text[:1] in "[{" else None, wrap_lines=True)
    if not content and span.get("kind") in ("llm", "tool"):
        st.caption(
            "No messages or tool input/output recorded for this span: content capture is off "
            "(LOOPSIGHT_CAPTURE_CONTENT=true records them, secrets redacted)."
        )
    detail = frames.span_detail(span)
    ui.table(
        detail,
        {
            "field": st.column_config.TextColumn("field", width="medium"),
            "value": st.column_config.TextColumn("value", width="large"),
        },
        max_rows=60,
    )


def body() -> None:
    st.title("Run timeline")
    trace_id = (st.query_params.get("run") or "").strip().lower()
    if not trace_id:
        st.caption("Pick a run (or open a link ending in ?run=<trace id>).")
        run_picker()
        return
    # filled after the run is read: an outage is then said on the page, not inside the folded picker
    another = st.expander("Open another run")
    if not HEX.match(trace_id):
        with another:
            run_picker()
        st.error(f"{ui.literal(trace_id[:80])} is not a trace id (32 hex characters).", icon=":material/warning:")
        st.page_link(ui.page("runs"), label="Back to the runs")
        return
    detail = ui.load("run", trace_id, what="This run")
    with another:
        run_picker()
    if detail is None:
        return
    spans = detail.get("spans") or []
    if not spans:
        st.warning(
            f"No spans stored for trace {trace_id}. It may be older than the retention, or not exported yet.",
            icon=":material/search:",
        )
        st.page_link(ui.page("runs"), label="Back to the runs")
        return
    header(trace_id, detail)
    bars, chosen = waterfall(trace_id, spans)
    left, right = st.columns([2, 3])
    with left:
        st.subheader("Tokens per step")
        tokens = frames.tokens_per_step(spans)
        if tokens.empty:
            st.caption("No model calls in this run.")
        else:
            ui.chart(charts.tokens_per_step(tokens))
        steps_table(detail.get("steps") or [])
        loops_table(detail.get("loops") or [])
    with right:
        st.subheader("Span detail")
        span_detail(trace_id, spans, bars, chosen)


ui.live(body)
