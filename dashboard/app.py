"""The Streamlit entry point: ``streamlit run app.py`` (see :func:`loopsight.dashboard.launch`).

Checks the source, renders the shared filters in the sidebar and runs the selected page.
``/?run=<trace_id>`` opens that run's timeline directly.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from loopsight.dashboard import filters, ui
from loopsight.dashboard.data import SourceError

HERE = Path(__file__).parent

st.set_page_config(page_title="loopsight", page_icon="🔁", layout="wide")

deep_link = bool(st.query_params.get("run"))
pages = [
    st.Page(HERE / "pages/overview.py", title="Overview", icon="📊", url_path="overview", default=not deep_link),
    st.Page(HERE / "pages/runs.py", title="Runs", icon="📋", url_path="runs"),
    st.Page(HERE / "pages/run.py", title="Run timeline", icon="🧭", url_path="run", default=deep_link),
    st.Page(HERE / "pages/stalls.py", title="Stalls", icon="🐢", url_path="stalls"),
    st.Page(HERE / "pages/loops.py", title="Loops", icon="🔁", url_path="loops"),
    st.Page(HERE / "pages/burn.py", title="Token burn", icon="🔥", url_path="burn"),
    st.Page(HERE / "pages/tools.py", title="Tools", icon="🛠️", url_path="tools"),
    st.Page(HERE / "pages/alerts.py", title="Alerts", icon="🚨", url_path="alerts"),
]
page = st.navigation(pages)

st.sidebar.caption(f"Reading {ui.escape(ui.source().describe())}")
agents: set[str] = set()
services: set[str] = set()
reachable = ui.check_source()
if reachable:
    try:
        for run in ui.fetch("runs", limit=2000):
            agents.update([run["agent"]] if run.get("agent") else [])
            services.update([run["service"]] if run.get("service") else [])
    except SourceError:
        pass  # the page shows the error where it needs the data
filters.shared_filters(agents, services)
if reachable:
    page.run()
