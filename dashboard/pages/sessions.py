"""Sessions: the conversations whose runs carry a session id, the most recently active first; one session's
runs in order and the loops among them, those across its runs (scope ``session``) included.
Deep link: ``?session=<id>``."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from loopsight.dashboard import filters, frames, ui
from loopsight.dashboard import format as fmt

SESSIONS_LISTED = ui.SESSIONS_LISTED
# The runs of one session listed (``total`` counts them all).
SESSION_RUNS = 500


def sessions_table(sessions: list[dict[str, Any]]) -> None:
    frame = pd.DataFrame(sessions)
    frame = frame.assign(
        tokens=frame["input_tokens"].fillna(0).astype("int64") + frame["output_tokens"].fillna(0).astype("int64"),
        first=frames.to_time(frame["first_started_at"]).to_numpy(),
        last=frames.to_time(frame["last_started_at"]).to_numpy(),
    )
    if "cost_usd" in frame:  # a collector before sessions had their cost answers without it
        unpriced = frame["unpriced_calls"] if "unpriced_calls" in frame else pd.Series(0, index=frame.index)
        frame["cost"] = [fmt.money(c, u, precise=True) for c, u in zip(frame["cost_usd"], unpriced, strict=False)]
    shown = ["session_id", "runs", "first", "last", "tokens", *(["cost"] if "cost" in frame else []), "loops"]
    event = st.dataframe(
        frame[shown],
        hide_index=True,
        width="stretch",
        height=ui.rows_height(len(frame), 15),
        column_config={
            "session_id": st.column_config.TextColumn("session", width=260, help="Click a row to open its runs."),
            "runs": st.column_config.NumberColumn("runs", format="%,d", width=60),
            "first": st.column_config.DatetimeColumn("first run (UTC)", format="YYYY-MM-DD HH:mm:ss", width=150),
            "last": st.column_config.DatetimeColumn("last run (UTC)", format="YYYY-MM-DD HH:mm:ss", width=150),
            "tokens": st.column_config.NumberColumn("tokens", format="%,d", width=90),
            "cost": st.column_config.TextColumn(
                "cost", width=80, help="its runs' priced model calls; a dash: none is priced"
            ),
            "loops": st.column_config.NumberColumn("loops", format="%,d", width=60),
        },
        on_select="rerun",
        selection_mode="single-cell",  # any cell opens the session, as a run table's cells open a run
        key="sessions_table",
    )
    selection = getattr(event, "selection", None)
    rows = [cell[0] for cell in (selection.get("cells") or [])] if selection is not None else []
    if rows and 0 <= rows[0] < len(frame):
        chosen = str(frame.iloc[rows[0]]["session_id"])
        if st.query_params.get("session") != chosen:
            st.query_params["session"] = chosen
            st.rerun()


def session_runs(session_id: str) -> None:
    """The runs of one session, oldest first, and the loops found among them."""
    st.subheader(f"Session {ui.literal(session_id)}", anchor=False)
    answer = ui.load("runs_page", what="The session's runs", session=session_id, limit=SESSION_RUNS)
    if answer is None:
        return
    runs = answer.get("runs") or []
    if not runs:
        st.info(f"No runs stored for session {ui.literal(session_id)}.", icon=":material/search:")
        return
    frame = frames.runs_frame(runs).sort_values("started_at")
    total = int(answer.get("total") or len(frame))
    # the session's own sums, over all its runs (the table below lists the first SESSION_RUNS); a
    # collector before ?session= answers another session: no sums then
    summed = ui.load("sessions", what="The session's totals", session=session_id, limit=1) or []
    whole = next((s for s in summed if s.get("session_id") == session_id), None)
    cols = st.columns(4)
    cols[0].metric("runs", fmt.count(total))
    if whole is not None:
        tokens = (whole.get("input_tokens") or 0) + (whole.get("output_tokens") or 0)
        cols[1].metric("tokens", fmt.tokens(int(tokens), compact=True))
        cols[2].metric("cost", fmt.money(whole.get("cost_usd"), whole.get("unpriced_calls"), precise=True))
        cols[3].metric("loops", fmt.count(int(whole.get("loops") or 0)))
    shown = f"The first {fmt.count(len(frame))} of its {fmt.count(total)} runs" if total > len(frame) else "Its runs"
    # a session is one conversation: its runs whatever the sidebar's agent, service or window
    st.caption(f"{shown}, whatever the sidebar's filters: a session is one conversation.")
    table = frame.assign(
        run=[fmt.short_id(t) for t in frame["trace_id"]],
        duration=[fmt.duration(v) for v in frame["duration_ms"]],
        cost=[fmt.money(c, u, precise=True) for c, u in zip(frame["cost_usd"], frame["unpriced_calls"], strict=False)],
    )
    columns = ["trace_id", "run", "started_at", "agent", "status", "termination_reason", "steps", "loops"]
    ui.run_table(
        table[[*columns, "tokens", "cost", "duration"]],
        {
            "run": st.column_config.TextColumn("run", width=105, help="Click a row to open its timeline."),
            "started_at": st.column_config.DatetimeColumn("started (UTC)", format="YYYY-MM-DD HH:mm:ss", width=145),
            "agent": st.column_config.TextColumn("agent", width=135),
            "status": st.column_config.TextColumn("status", width=58),
            "termination_reason": st.column_config.TextColumn("termination", width=112),
            "steps": st.column_config.NumberColumn("steps", width=50, format="%,d"),
            "loops": st.column_config.NumberColumn("loops", width=50, format="%,d"),
            "tokens": st.column_config.NumberColumn("tokens", width=70, format="%,d"),
            "cost": st.column_config.TextColumn("cost", width=70),
            "duration": st.column_config.TextColumn("duration", width=74),
        },
        key="session_runs_table",
        colored={"status": "status", "termination_reason": "termination_reason"},
        column_order=["run", "started_at", "agent", "status", "termination_reason", "steps", "loops", "tokens", "cost"],
        pinned=False,
    )
    session_loops(session_id)


def session_loops(session_id: str) -> None:
    """The loops of the session's runs (``/api/v1/loops?session=``), those across its runs included."""
    st.subheader("Loops in this session")
    answer = ui.load("loops_page", what="Loops", session=session_id, limit=ui.LISTED_LOOPS)
    if answer is None:
        return
    loops = answer.get("loops") or []
    if not loops:
        st.caption("No loops in this session's runs.")
        return
    frame = ui.with_agents(loops)
    frame = frame.assign(
        run=[fmt.short_id(t) for t in frame["trace_id"]],
        scope=frame.get("scope", pd.Series("run", index=frame.index)).fillna("run"),
    )
    across = int((frame["scope"] == "session").sum())
    if across:
        st.warning(
            f"{across} loop(s) span several runs of this session: the conversation repeats itself across turns.",
            icon=":material/repeat:",
        )
    ui.run_table(
        frame[["trace_id", "run", "agent", "tool", "kind", "scope", "count", "wasted_tokens"]],
        {
            "run": st.column_config.TextColumn("run (of its last call)", width=140),
            "agent": st.column_config.TextColumn("agent", width=135),
            "tool": st.column_config.TextColumn("tool", width=190),
            "kind": st.column_config.TextColumn("kind", width=110),
            "scope": st.column_config.TextColumn("scope", width=80, help="session: across the session's runs"),
            "count": st.column_config.NumberColumn("repeats", format="%,d", width=65),
            "wasted_tokens": st.column_config.NumberColumn("wasted tokens", format="%,d", width=100),
        },
        key="session_loops_table",
        colored={"kind": "loop_kind", "scope": "loop_scope"},
        column_order=["run", "agent", "tool", "kind", "scope", "count", "wasted_tokens"],
        pinned=False,
    )


def body() -> None:
    shared = filters.current()
    sessions = ui.load("sessions", what="Sessions", limit=SESSIONS_LISTED, **shared.params())
    if sessions is None:
        return
    chosen = (st.query_params.get("session") or "").strip()
    if not sessions and not chosen:
        if ui.fetch("runs", limit=1, **shared.params()):
            st.info(
                "No run in this window carries a session id. Runs are grouped into sessions by "
                "`gen_ai.conversation.id` (or `session.id`, Langfuse's session, LangGraph's `thread_id`).",
                icon=":material/forum:",
            )
        else:
            ui.empty_state()
        return
    if sessions:
        st.caption(
            f"{fmt.count(len(sessions))} sessions ({ui.describe(shared)}), the most recently active first"
            + (f"; the newest {fmt.count(SESSIONS_LISTED)}" if len(sessions) >= SESSIONS_LISTED else "")
            + ". Click a session to open its runs."
        )
        sessions_table(sessions)
    if chosen:
        session_runs(chosen)


st.title("Sessions")
ui.live(body)
