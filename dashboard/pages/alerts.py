"""Alerts: the rules, their state and value, the history of transitions with example runs, and each
rule's metric against its threshold."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from loopsight.dashboard import charts, frames, ui

st.title("Alerts")
answer = ui.load("alerts", what="Alerts")
if answer is not None:
    rules = pd.DataFrame(answer.get("rules") or [])
    events = pd.DataFrame(answer.get("events") or [])
    if rules.empty:
        st.info("No alert rules loaded. Start the collector with --rules FILE (a TOML file of [[rules]]).", icon="📭")
    else:
        st.subheader("Rules")
        st.dataframe(rules.astype(str), hide_index=True, width="stretch")
    if not events.empty:
        st.subheader("History")
        time = frames.first_column(events, "at", "time", "changed_at", "timestamp")
        if time:
            events[time] = frames.to_time(events[time])
        examples = frames.first_column(events, "examples", "example_runs", "trace_ids")
        if examples:
            events[examples] = [", ".join(map(str, v)) if isinstance(v, list) else str(v or "") for v in events[examples]]
        st.dataframe(events, hide_index=True, width="stretch")
        rule_col = frames.first_column(events, "rule", "name")
        if time and rule_col and "value" in events:
            st.subheader("Metric per rule")
            thresholds = dict(zip(rules.get("name", []), rules.get("threshold", []))) if not rules.empty else {}
            for name, group in events.groupby(rule_col):
                st.caption(ui.escape(name))
                threshold = thresholds.get(name)
                st.altair_chart(charts.metric_with_threshold(group, None if pd.isna(threshold) else float(threshold), time=time),
                                width="stretch")
