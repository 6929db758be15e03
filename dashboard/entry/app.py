"""The Streamlit entry point: ``streamlit run app.py`` (see :func:`loopsight.dashboard.launch`).

Checks the source, renders the shared filters in the sidebar and runs the selected page.
``/?run=<trace_id>`` opens that run's timeline directly; ``/compare?a=<trace_id>&b=<trace_id>``
two runs side by side.
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import streamlit as st

from loopsight.dashboard import filters, ui

PAGES = Path(__file__).resolve().parent.parent / "pages"

# Altair validates every schema object as it is built ("debug mode"), a third of the run page's
# script time; the chart functions' specs are validated whole by their tests instead.
alt.utils.schemapi.disable_debug_mode()

st.set_page_config(page_title="loopsight", page_icon=":material/repeat:", layout="wide")

pages = [
    # Streamlit serves the default page at "/" but reserves its url_path without serving it:
    # "home" is that reserved name, so that "/overview" can be an alias.
    st.Page(PAGES / "overview.py", title="Overview", icon=":material/dashboard:", url_path="home", default=True),
    st.Page(PAGES / "runs.py", title="Runs", icon=":material/list:", url_path="runs"),
    st.Page(PAGES / "sessions.py", title="Sessions", icon=":material/forum:", url_path="sessions"),
    st.Page(PAGES / "run.py", title="Run timeline", icon=":material/timeline:", url_path="run"),
    st.Page(PAGES / "compare.py", title="Compare runs", icon=":material/compare_arrows:", url_path="compare"),
    st.Page(PAGES / "stalls.py", title="Stalls", icon=":material/hourglass_bottom:", url_path="stalls"),
    st.Page(PAGES / "loops.py", title="Loops", icon=":material/repeat:", url_path="loops"),
    st.Page(PAGES / "burn.py", title="Token burn", icon=":material/local_fire_department:", url_path="burn"),
    st.Page(PAGES / "tools.py", title="Tools", icon=":material/build:", url_path="tools"),
    st.Page(PAGES / "budgets.py", title="Budgets", icon=":material/speed:", url_path="budgets"),
    st.Page(PAGES / "alerts.py", title="Alerts", icon=":material/notifications:", url_path="alerts"),
]


def _overview_alias() -> None:
    """``/overview`` (the page's name, older links) opens the overview, which Streamlit serves at ``/``."""
    st.switch_page(pages[0], query_params=st.query_params.to_dict())


page = st.navigation([*pages, st.Page(_overview_alias, title="Overview", url_path="overview", visibility="hidden")])
if st.query_params.get("run") and page.url_path not in ("run", "compare"):
    # A shared link to the app's root with ?run=<trace_id> opens that run's timeline.
    st.switch_page(next(p for p in pages if p.url_path == "run"), query_params={"run": st.query_params["run"]})

st.sidebar.caption(f"Reading {ui.source().kind} {ui.literal(ui.source().target)}")
agents: set[str] = set()
services: set[str] = set()
reachable = ui.check_source()
if reachable:
    # Everything the sidebar and the page will ask first, asked at once; the page then draws from the cache.
    pending = filters.pending()
    st.session_state["_page"] = page.url_path
    ui.prefetch(
        [
            ui.values_question("agent", pending),
            ui.values_question("service", pending),
            *ui.questions(page.url_path, pending),
        ]
    )
    # The pickers' values: the agents and services of the window, one row each, counted on the server
    # (a failure is shown by the page, where it needs the data).
    agents.update(ui.picker_values("agent", pending))
    services.update(ui.picker_values("service", pending))
filters.shared_filters(agents, services)
if reachable:
    page.run()
