"""Loops: exact repeats, oscillations, repeated errors, semantic repeats and no-progress, within a run and
across a session's runs: where (which agent, which tool), when, and what they cost in tokens and money."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from loopsight.attributes import LOOP_KINDS
from loopsight.dashboard import charts, filters, frames, ui
from loopsight.dashboard import format as fmt

LISTED_LOOPS = ui.LISTED_LOOPS
COLUMNS = [
    "trace_id",
    "run_id",
    "agent",
    "started_at",
    "tool",
    "kind",
    "scope",
    "count",
    "first_step",
    "wasted_tokens",
    "wasted_cost_usd",
]


TOP_TOOLS = 10  # the tools the chart of tools that loop most shows


def wasted(frame: pd.DataFrame) -> tuple[int, float | None]:
    """Per run, the tokens and money spent from its earliest loop on (the loop that wastes the most, as
    burn_runs.sql counts it), each run once: ``(tokens, USD)``; USD ``None`` when none of it is priced."""
    if frame.empty:
        return 0, None
    worst = frame.sort_values("wasted_tokens", ascending=False, na_position="last")
    per_run = worst.drop_duplicates(["trace_id", "run_id"])
    tokens = int(per_run["wasted_tokens"].fillna(0).sum())
    priced = per_run["wasted_cost_usd"].dropna()
    return tokens, float(priced.sum()) if len(priced) else None


def loop_rate(buckets: list[dict[str, Any]] | None) -> float | None:
    """Runs with a loop / runs over the window, from the buckets of ``/api/v1/loops/over_time`` (each run
    counts in the bucket of its start, so their sums are the window's)."""
    runs = sum(int(b.get("runs") or 0) for b in buckets or [])
    return sum(int(b.get("looping_runs") or 0) for b in buckets or []) / runs if runs else None


def tiles(shared: filters.Filters, answer: dict[str, Any], total: int) -> None:
    buckets = ui.fetch_quiet("loops_over_time", bucket_seconds=shared.bucket_seconds, **shared.params())
    tokens, usd = answer.get("wasted_tokens"), answer.get("wasted_cost_usd")
    if tokens is None:  # an older collector: the listed loops only
        tokens, usd = wasted(ui.with_agents(answer.get("loops") or [], shared.agent))
    cols = st.columns(4)
    cols[0].metric("Loop rate (runs with a loop)", ui.pct(loop_rate(buckets)))
    cols[1].metric("Loops found", fmt.count(total), help="Every loop of the window, counted on the server.")
    cols[2].metric(
        "Tokens spent after a loop began",
        fmt.count(tokens),
        help="The tokens of the model calls begun after a loop began, each call once (a call two loops "
        "wasted counts once); every loop of the window, counted on the server.",
    )
    unpriced = int(answer.get("unpriced_runs") or 0)
    cols[3].metric(
        "Money lost to loops",
        fmt.MISSING if usd is None else fmt.usd(usd, precise=True),
        help="What those tokens cost (docs/cost.md); a dash when none of them is priced"
        + (f"; {fmt.count(unpriced)} looping runs unpriced, left out." if unpriced else "."),
    )


def body() -> None:
    shared = filters.current()
    params = shared.params()
    answer = ui.load("loops_page", what="Loops", limit=LISTED_LOOPS, **params)
    if answer is None:
        return
    frame = ui.with_agents(answer.get("loops") or [], shared.agent)
    for column in COLUMNS:
        if column not in frame:
            frame[column] = pd.Series(dtype="object")
    total = int(answer.get("total") if answer.get("total") is not None else len(frame))
    tiles(shared, answer, total)
    if frame.empty:
        if ui.fetch("runs", limit=1, **params):
            st.success("No loops in this window.", icon=":material/check_circle:")
        else:
            ui.empty_state()
        return
    frame["started_at"] = frames.to_time(frame["started_at"]).to_numpy()
    frame["scope"] = frame["scope"].fillna("run")
    counts = answer.get("counts") or {}
    st.caption(
        "By kind over the window: "
        + ", ".join(f"{kind.replace('_', ' ')} {fmt.count(counts[kind])}" for kind in LOOP_KINDS if counts.get(kind))
        + (
            f"; {fmt.count(int((frame['scope'] == 'session').sum()))} of the listed loops span a session's runs"
            if (frame["scope"] == "session").any()
            else ""
        )
        + "."
    )
    left, right = st.columns(2)
    with left:
        st.subheader("Tools that loop most")
        tools = ui.fetch_quiet("looping_tools", limit=TOP_TOOLS, **params)
        if tools:  # counted on the server over the whole window
            by_kind = pd.DataFrame(
                [{"tool": t["tool"], "kind": k, "loops": int(t.get(k) or 0)} for t in tools for k in LOOP_KINDS]
            )
            by_kind = by_kind[by_kind["loops"] > 0]
            ui.chart(charts.bar_by(by_kind, "tool", "loops", color="kind", meaning="loop_kind", title="loops"))
        else:
            ui.chart(charts.bar_by(frame, "tool", "count", color="kind", meaning="loop_kind", title="repeats"))
            if len(frame) < total:
                st.caption(f"Over the {fmt.count(len(frame))} newest loops of {fmt.count(total)}.")
    with right:
        st.subheader("Loops over time")
        over_time(shared)
    st.subheader("Loops by run")
    table = frame.sort_values("wasted_tokens", ascending=False)
    table = table.assign(
        run=[fmt.short_id(t) for t in table["trace_id"]],
        wasted_cost=[fmt.usd(v, precise=True) for v in table["wasted_cost_usd"]],
    )[
        [
            "trace_id",
            "run",
            "agent",
            "tool",
            "kind",
            "scope",
            "count",
            "wasted_tokens",
            "wasted_cost",
            "first_step",
            "started_at",
        ]
    ]
    ui.run_table(
        table,
        {
            "run": st.column_config.TextColumn("run", width=105, help="Click a row to open the run."),
            "started_at": st.column_config.DatetimeColumn("run started (UTC)", format="YYYY-MM-DD HH:mm:ss", width=150),
            "agent": st.column_config.TextColumn("agent", width=125),
            "tool": st.column_config.TextColumn("tool", width=170, help="For an oscillation: the tools it alternates"),
            "kind": st.column_config.TextColumn("kind", width=110),
            "scope": st.column_config.TextColumn(
                "scope", width=72, help="run: within the run; session: across the runs of its session (on its last run)"
            ),
            "count": st.column_config.NumberColumn("repeats", format="%,d", width=65),
            "first_step": st.column_config.NumberColumn("first step", format="%,d", width=70),
            "wasted_tokens": st.column_config.NumberColumn(
                "wasted tokens", format="%,d", width=100, help="tokens the run spent from this loop's first step on"
            ),
            "wasted_cost": st.column_config.TextColumn(
                "wasted cost", width=85, help="what those tokens cost; a dash: not priced"
            ),
        },
        key="loops_table",
        colored={"kind": "loop_kind", "scope": "loop_scope"},
        column_order=[c for c in table.columns if c != "trace_id"],
        pinned=False,
    )


def over_time(shared: filters.Filters) -> None:
    """Loops per kind in buckets of their run's start, counted on the server over the whole window."""
    bucket = shared.bucket_seconds
    buckets = ui.load("loops_over_time", what="Loops over time", bucket_seconds=bucket, **shared.params())
    if buckets is None:
        return
    counted = frames.loops_per_bucket(buckets, bucket)
    if counted.empty:
        st.caption("No loops in this window.")
        return
    start, end = shared.window()
    window = frames.fitted_window(counted["bucket"], counted["bucket_end"], (start, end))
    narrower = filters.bucket_seconds(max((window[1] - window[0]).total_seconds(), 60))
    if narrower < bucket:
        # The loops fill a small part of the window: counted again in buckets that fit that part.
        since = window[0].floor(f"{narrower}s").to_pydatetime()
        finer = ui.fetch_quiet("loops_over_time", bucket_seconds=narrower, **{**shared.params(), "since": since})
        finer_counted = frames.loops_per_bucket(finer or [], narrower)
        if not finer_counted.empty:
            counted, bucket = finer_counted, narrower
            window = frames.fitted_window(counted["bucket"], counted["bucket_end"], (start, end))
    ui.chart(charts.events_over_time(counted, window, title="loops"))
    st.caption(
        f"Loops by the start of their run, in {fmt.seconds(bucket)} buckets, counted over the whole window "
        f"({ui.describe(shared)})."
    )


st.title("Loops")
ui.live(body)
