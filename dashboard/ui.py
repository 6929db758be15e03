"""Streamlit helpers every page shares: the source, cached fetches, empty/error states, safe text.

Attribute values come from the agents being observed and may be hostile: they are shown
as text (dataframes, ``st.text``/``st.code``) or markdown-escaped, never as HTML.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from loopsight.dashboard.data import (
    ApiSource,
    AuthRequired,
    DuckDBSource,
    NotAvailable,
    OutdatedStore,
    Source,
    SourceError,
    SourceUnreachable,
    source_from_env,
)
from loopsight.dashboard.filters import RANGE_LABELS, current

PAGES = Path(__file__).resolve().parent / "pages"
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-!|<>~$=&\"'^/])")
# Character references, not backslashes, for the characters GFM autolinks key on
# ("http:", "www.", "a@b"): a backslash-escaped colon still autolinks a URL.
_AUTOLINK_KEYS = {":": "&#58;", ".": "&#46;", "@": "&#64;"}


def escape(text: Any) -> str:
    """Markdown-escape a value so that links, emphasis and HTML show as the characters they are.

    Example:
        >>> escape("[x](http://e.vil) <b>")
        '\\\\[x\\\\]\\\\(http&#58;\\\\/\\\\/e&#46;vil\\\\) \\\\<b\\\\>'
    """
    text = "" if text is None else str(text)
    text = _MD_SPECIAL.sub(r"\\\1", text.replace("\n", " ").replace("\r", " "))
    return "".join(_AUTOLINK_KEYS.get(c, c) for c in text)


def literal(value: Any) -> str:
    """A value as a markdown code span: shown verbatim, never a link, emphasis or HTML.

    Used for every value that comes from the observed agents (names, attributes) wherever
    Streamlit renders markdown; escaping alone does not stop GFM from autolinking URLs.

    Example:
        >>> literal("[x](http://e.vil)")
        '`[x](http://e.vil)`'
        >>> literal("a`b")
        '``a`b``'
    """
    text = ("" if value is None else str(value)).replace("\n", " ").replace("\r", " ")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def describe(filters: Any) -> str:
    """The shared filters as markdown (names as literals)."""
    return ", ".join(_filter_parts(filters, with_all_time=True))


def _filter_parts(filters: Any, with_all_time: bool) -> list[str]:
    parts = [RANGE_LABELS.get(filters.range, escape(filters.range))] if with_all_time or filters.range != "all" else []
    if filters.service:
        parts.append(f"service {literal(filters.service)}")
    if filters.agent:
        parts.append(f"agent {literal(filters.agent)}")
    return parts


def source() -> Source:
    """The source chosen by ``launch()`` (environment), the same object on every rerun."""
    if "_source" not in st.session_state:
        st.session_state["_source"] = source_from_env()
    return st.session_state["_source"]


@st.cache_data(ttl=10, show_spinner=False, max_entries=512)
def _cached(key: str, _source: Source, method: str, args: tuple[Any, ...], params: tuple[tuple[str, Any], ...]) -> Any:
    return getattr(_source, method)(*args, **dict(params))


def fetch(method: str, *args: Any, **params: Any) -> Any:
    """``source().<method>(*args, **params)``, cached for 10 s per source and parameters."""
    src = source()
    return _cached(src.key, src, method, args, tuple(sorted(params.items())))


def fetch_quiet(method: str, *args: Any, **params: Any) -> Any:
    """Like :func:`fetch`, but ``None`` when the source cannot answer (for optional extras)."""
    try:
        return fetch(method, *args, **params)
    except SourceError:
        return None


def load(method: str, *args: Any, what: str | None = None, **params: Any) -> Any:
    """Like :func:`fetch`, but a failure is shown in place and ``None`` returned.

    A source that does not offer the question yet gets an info box; an unreachable source
    stops the page with the error state.
    """
    try:
        return fetch(method, *args, **params)
    except (SourceUnreachable, AuthRequired) as exc:
        unreachable(exc)
        st.stop()
    except NotAvailable as exc:
        st.info(
            f"{escape(what or method)}: not available from this source yet. {literal(exc)}",
            icon=":material/hourglass_top:",
        )
    except SourceError as exc:
        st.error(f"{escape(what or method)} failed: {literal(exc)}", icon=":material/warning:")
    return None


def unreachable(exc: Exception) -> None:
    """The error state: which source was tried, why it failed, what to do."""
    src = source()
    st.error(f"Cannot read {src.kind} {literal(src.target)}", icon=":material/power_off:")
    st.text(str(exc))
    if isinstance(exc, AuthRequired) and isinstance(src, ApiSource):
        st.markdown("Give the dashboard the collector's token:")
        st.code(f"loopsight dashboard --collector {src.url} --token <token>", language="bash")
    elif isinstance(exc, OutdatedStore) and isinstance(src, DuckDBSource):
        st.markdown("Upgrade the file to this loopsight's schema (it keeps the data and fills the new tables):")
        st.code(f"loopsight db upgrade --db {shlex.quote(src.path)}", language="bash")
    elif isinstance(src, ApiSource):
        st.markdown("Start a collector, or point the dashboard at the one your agents export to:")
        st.code(
            f"loopsight collector --http-port {src.url.rsplit(':', 1)[-1].strip('/') or '4318'}\n"
            f"loopsight dashboard --collector {src.url}",
            language="bash",
        )
    else:
        st.markdown("Check the path, or read the data through the collector that holds the file:")
        st.code("loopsight dashboard --collector http://127.0.0.1:4318", language="bash")


def check_source() -> bool:
    """Show the error state and return False when the source cannot be read at all."""
    try:
        _cached(source().key, source(), "check", (), ())
    except SourceError as exc:
        unreachable(exc)
        return False
    return True


def empty_state(page_filters: Sequence[str] = ()) -> None:
    """No runs: name the filters that hide them, or say nothing was received yet and how to send some.

    ``page_filters``: the page's own filters in effect, as markdown (values as literals).
    """
    in_effect = [*_filter_parts(current(), with_all_time=False), *page_filters]
    if in_effect and fetch("runs", limit=1):
        st.info(f"No runs match these filters: {', '.join(in_effect)}. Widen or clear them.", icon=":material/search:")
        return
    src = source()
    st.info("No agent runs received yet.", icon=":material/inbox:")
    if isinstance(src, ApiSource):
        st.markdown("Point an instrumented agent at the collector:")
        st.code(
            f'import loopsight\nloopsight.configure(endpoint="{src.url}", service_name="my-agent")\n\n'
            f"# or any OpenTelemetry SDK:\n# export OTEL_EXPORTER_OTLP_ENDPOINT={src.url}",
            language="python",
        )
        st.markdown("Or send demo traffic:")
        st.code(f"loopsight demo --endpoint {src.url}", language="bash")
    else:
        st.markdown("This file holds no runs. Load OTLP files into it, or read a collector instead:")
        st.code(f"loopsight ingest traces.json --db {getattr(src, 'path', 'loopsight.duckdb')}", language="bash")


def page(name: str) -> str:
    """The path of ``pages/<name>.py`` for ``st.page_link`` / ``st.switch_page``."""
    return str(PAGES / f"{name}.py")


def run_link(trace_id: str) -> str:
    """The relative URL of a run's timeline (works behind any base path)."""
    return f"run?run={trace_id}"


def pct(value: Any) -> str:
    """``0.123`` -> ``'12.3%'``; missing -> ``'–'``."""
    return "–" if value is None else f"{100 * float(value):.1f}%"
