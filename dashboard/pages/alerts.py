"""Alerts: the rules with their state and value, the history of transitions with links to the
example runs, and each rule's metric against its threshold."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from loopsight.dashboard import charts, frames, ui
from loopsight.dashboard import format as fmt

STATE_ICONS = {"firing": "●", "pending": "◐", "resolved": "○", "ok": "○", "inactive": "–"}
RULE_COLUMNS = [
    "state",
    "name",
    "metric",
    "value",
    "threshold",
    "baseline_value",
    "samples",
    "window",
    "state_since",
    "notify_failures",
    "example",
]


def _first_example(examples: object) -> str | None:
    return ui.run_link(examples[0]) if isinstance(examples, list) and examples else None


def body() -> None:
    answer = ui.load("alerts", what="Alerts")
    if answer is None:
        return
    rules = pd.DataFrame(answer.get("rules") or [])
    events = pd.DataFrame(answer.get("events") or [])
    if rules.empty:
        st.info(
            "No alert rules loaded. Start the collector with --rules FILE (a TOML file of [[rules]]), "
            "or run them once with: loopsight alerts check --rules FILE",
            icon=":material/inbox:",
        )
    else:
        firing = int((rules.get("state") == "firing").sum()) if "state" in rules else 0
        failures = int(rules.get("notify_failures", pd.Series(dtype="int64")).fillna(0).sum())
        cols = st.columns(3)
        cols[0].metric("Rules", fmt.count(len(rules)))
        cols[1].metric("Firing", fmt.count(firing))
        cols[2].metric("Failed notifications", fmt.count(failures))
        if failures:
            st.warning(
                "Some notifications could not be delivered: check the webhook targets (the history shows the errors).",
                icon=":material/mail:",
            )
        table = rules.assign(
            state=[f"{STATE_ICONS.get(str(s), '')} {s}" for s in rules.get("state", pd.Series([""] * len(rules)))],
            example=[_first_example(e) for e in rules.get("examples", pd.Series([None] * len(rules)))],
        )
        st.subheader("Rules")
        st.dataframe(
            frames.as_text(table[[c for c in RULE_COLUMNS if c in table]], times=["state_since"]),
            hide_index=True,
            column_config={
                "example": st.column_config.LinkColumn("example run", display_text=r"run\?run=(.{12})"),
                "baseline_value": "baseline",
                "state_since": "since (UTC)",
                "notify_failures": "failed notifications",
            },
        )
    st.subheader("History")
    if events.empty:
        st.caption("No transitions yet.")
    else:
        time = frames.first_column(events, "at", "time", "occurred_at")
        if "examples" in events:
            events["example"] = [_first_example(e) for e in events["examples"]]
            events["examples"] = [", ".join(map(str, e)) if isinstance(e, list) else "" for e in events["examples"]]
        shown = [
            c
            for c in [
                time,
                "rule",
                "from_state",
                "to_state",
                "value",
                "threshold",
                "baseline",
                "samples",
                "example",
                "examples",
                "notify_status",
                "notify_error",
            ]
            if c and c in events
        ]
        st.dataframe(
            frames.as_text(events[shown], times=[time] if time else []),
            hide_index=True,
            column_config={
                "example": st.column_config.LinkColumn("example run", display_text=r"run\?run=(.{12})"),
                **({time: f"{time} (UTC)"} if time else {}),
                "from_state": "from",
                "to_state": "to",
                "notify_status": "notification",
            },
        )
    if not rules.empty and "name" in rules:
        st.subheader("Metric per rule")
        columns = st.columns(2)
        for i, rule in enumerate(rules.to_dict("records")):
            with columns[i % 2]:
                st.caption(f"{ui.literal(rule['name'])} ({ui.literal(rule.get('metric', ''))})")
                series = ui.load("alert_series", str(rule["name"]), what="Metric history")
                if series is None:
                    continue
                frame = pd.DataFrame(series)
                if frame.empty:
                    st.caption("Not evaluated yet.")
                    continue
                frame["at"] = frames.to_time(frame["at"])
                threshold = rule.get("threshold")
                threshold = None if threshold is None or pd.isna(threshold) else float(threshold)
                ui.chart(charts.metric_with_threshold(frame, threshold))


st.title("Alerts")
ui.live(body)
