"""Helpers for reading what an AppTest run rendered."""

from __future__ import annotations

import html
import re

from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.testing.v1 import AppTest

from loopsight.dashboard import ui


def page(app: AppTest, name: str) -> AppTest:
    """Switch to ``dashboard/pages/<name>.py`` and run."""
    return app.switch_page(ui.page(name)).run()


def texts(app: AppTest) -> str:
    """Every visible text of the run (markdown, captions, alerts, code, metrics) joined, as shown
    (markdown escapes removed)."""
    parts = []
    for kind in ("markdown", "caption", "info", "error", "warning", "success", "code", "title", "subheader", "text"):
        parts.extend(str(e.value) for e in app.get(kind))
    parts.extend(f"{m.label}={m.value}" for m in app.metric)
    joined = re.sub(r"(`+) ?(.+?) ?\1", r"\2", "\n".join(parts))  # code spans shown verbatim
    return html.unescape(re.sub(r"\\([^\w\s])", r"\1", joined))


def charts(app: AppTest) -> list:
    """The Altair charts the run drew, as ``(spec JSON text, [DataFrame per dataset])``."""
    drawn = []
    for chart in app.get("vega_lite_chart"):
        proto = chart.proto
        datasets = [convert_arrow_bytes_to_pandas_df(d.data.data) for d in proto.datasets]
        if proto.data.data:
            datasets.append(convert_arrow_bytes_to_pandas_df(proto.data.data))
        drawn.append((proto.spec, datasets))
    return drawn


def tables(app: AppTest) -> list:
    """The dataframes the run showed (pandas, as given to st.dataframe)."""
    return [table.value for table in app.dataframe]


def assert_clean(app: AppTest) -> None:
    """No Streamlit exception and no error box on the page."""
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error, [e.value for e in app.error]
