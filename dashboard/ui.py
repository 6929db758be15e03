"""Streamlit helpers every page shares: the source, cached fetches, empty/error states, safe text.

Attribute values come from the agents being observed and may be hostile: they are shown
as text (dataframes, ``st.text``/``st.code``) or markdown-escaped, never as HTML.
"""

from __future__ import annotations

import contextlib
import gc
import re
import shlex
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

from loopsight.dashboard import format as fmt
from loopsight.dashboard import frames
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
from loopsight.dashboard.filters import Filters, bucket_seconds, current

PAGES = Path(__file__).resolve().parent / "pages"

# What is loaded by now (Streamlit, pandas, Altair's schema, pyarrow) lives as long as the server:
# kept out of the collector's full passes, which otherwise walk it all again and again.
gc.collect()
gc.freeze()
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


def from_url(key: str, param: str, options: Sequence[Any] | Callable[[str], Any]) -> Any:
    """A page's own widget starts from the link's ``param`` (once a session, before the widget is
    made) when it names one of ``options`` (numbers compared as numbers), or when ``options``
    (a function) reads it as a value other than None; returns that value or None.

    Example:
        >>> from_url("runs_status", "status", ["any", "ok", "error"])  # doctest: +SKIP
        'error'
    """
    text = st.query_params.get(param)
    if key in st.session_state or text is None:
        return None
    if callable(options):
        found = options(text)
    else:
        found = next(
            (o for o in options if str(o) == text or (isinstance(o, (int, float)) and _number(text) == o)), None
        )
    if found is not None:
        st.session_state[key] = found
    return found


def whole_number(low: int, high: int) -> Callable[[str], int | None]:
    """A :func:`from_url` reader of a whole number from ``low`` to ``high`` (None for anything else).

    Example:
        >>> whole_number(2, 100)("7"), whole_number(2, 100)("99999999999999999999"), whole_number(2, 100)("1")
        (7, None, None)
    """

    def read(text: str) -> int | None:
        if not (text.isascii() and text.isdigit() and len(text) <= 20):
            return None
        value = int(text)
        return value if low <= value <= high else None

    return read


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def to_url(key: str, param: str, default: Any, then: Callable[[], None] | None = None) -> Callable[[], None]:
    """An ``on_change`` writing a page widget's value into the link (left out at ``default``), so a
    link opens the same view; ``then`` runs after (a filter change goes back to the first page)."""

    def keep() -> None:
        value = st.session_state.get(key)
        if value is None or value == default:
            if param in st.query_params:
                del st.query_params[param]
        else:
            st.query_params[param] = str(value)
        if then is not None:
            then()

    return keep


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
    parts = [escape(filters.label())] if with_all_time or filters.range != "all" else []
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
    """``source().<method>(*args, **params)``, cached for 10 s per source and parameters.

    Parameters left at ``None`` are dropped first (the source drops them too), so two pages
    asking the same question with differently spelt filters share one answer.
    """
    src = source()
    given = tuple(sorted((k, v) for k, v in params.items() if v is not None and v != ""))
    return _cached(src.key, src, method, args, given)


Call = tuple[str, tuple[Any, ...], dict[str, Any]]


def ask(method: str, *args: Any, **params: Any) -> Call:
    """One question for :func:`prefetch`: ``ask("loops", limit=1000, **window)``."""
    return (method, args, params)


def prefetch(calls: Iterable[Call]) -> None:
    """Ask several questions at once (a few threads) so that the page's own :func:`fetch` calls, made
    in order as it draws, find their answers cached. Failures are left for those calls to report."""
    ctx = get_script_run_ctx(suppress_warning=True)

    def one(call: Call) -> None:
        if ctx is not None:
            add_script_run_ctx(threading.current_thread(), ctx)
        method, args, params = call
        with contextlib.suppress(SourceError):
            fetch(method, *args, **params)

    todo = list(calls)
    if not todo:
        return
    started = time.perf_counter()
    one(todo[0])
    if time.perf_counter() - started < CACHED_SECONDS or len(todo) < 2:
        # The first answer came from the cache: so (nearly always) do the others; no threads for them.
        for call in todo[1:]:
            one(call)
        return
    with ThreadPoolExecutor(max_workers=PREFETCH_THREADS) as pool:
        list(pool.map(one, todo[1:]))


PREFETCH_THREADS = 4
# The runs one page of the Runs table lists (``total`` counts them all).
RUNS_PAGE = 200
# The sessions the Sessions page lists, the most recently active first.
SESSIONS_LISTED = 100
# An answer faster than this came from the cache.
CACHED_SECONDS = 0.005
# "All time" for the overview's tiles: the overview question reads a missing start as the last 24 hours.
ALL_TIME = datetime(1970, 1, 1)
# The runs the run page's picker lists (newest first; a pasted trace id opens any other).
PICK_LIMIT = 200
# The runs the burn question lists with its per-agent rows: the overview's top spenders.
TOP_SPENDERS = 5
# The values a picker lists (``/api/v1/values``: one row per value, counted on the server).
PICKER_VALUES = 500
# The loops the Loops page and the overview list (the counts are the whole window's).
LISTED_LOOPS = 1000


def values_question(field: str, shared: Filters) -> Call:
    """The values of ``field`` (agent, service, tool) the window's runs have, for a picker: the agent
    picker keeps the service filter and the service picker the agent filter, never their own."""
    window = {"since": shared.since(), "until": shared.until()}
    others = {
        "agent": {"service": shared.service},
        "service": {"agent": shared.agent},
        "tool": {"agent": shared.agent, "service": shared.service},
    }[field]
    return ask("values", field, limit=PICKER_VALUES, **window, **others)


def picker_values(field: str, shared: Filters | None = None) -> list[str]:
    """The values of ``field`` for a picker (sorted; empty when the source cannot say)."""
    method, args, params = values_question(field, shared or current())
    answer = fetch_quiet(method, *args, **params) or []
    return sorted({str(v["value"]) for v in answer if v.get("value") not in (None, "")})


def tools_question(by_agent: bool = False, **params: Any) -> Call:
    """The tool statistics question, per tool and agent when asked (the API's ``group_by=agent``)."""
    if not by_agent:
        return ask("tools", **params)
    grouping = {"group_by": "agent"} if isinstance(source(), ApiSource) else {"by_agent": True}
    return ask("tools", **grouping, **params)


def questions(url_path: str, shared: Filters) -> list[Call]:
    """What the page at ``url_path`` will ask first with these filters: :func:`prefetch` asks it all at once."""
    params = shared.params()
    if url_path in ("", "home", "overview"):
        return [
            ask("overview", **{**params, "since": params["since"] or ALL_TIME}),
            ask("terminations", bucket_seconds=shared.bucket_seconds, **params),
            ask("burn", limit=TOP_SPENDERS, **params),
            ask("loops_page", limit=LISTED_LOOPS, **params),
            ask("stalls_page", **params),
            tools_question(by_agent=True, **params),
        ]
    if url_path == "runs":
        return [
            values_question("tool", shared),
            ask("runs_page", limit=RUNS_PAGE, **params),
            ask("terminations", bucket_seconds=shared.bucket_seconds, **params),
        ]
    if url_path == "run":
        trace = (st.query_params.get("run") or "").strip().lower()
        picker = ask("runs", limit=PICK_LIMIT, **params)
        return [ask("run", trace), picker] if trace else [picker]
    if url_path == "stalls":
        return [
            ask("stalls", kind="stuck", agent=shared.agent, service=shared.service),
            ask("stalls_page", **params),
        ]
    if url_path == "loops":
        return [
            ask("loops_page", limit=LISTED_LOOPS, **params),
            ask("loops_over_time", bucket_seconds=shared.bucket_seconds, **params),
        ]
    if url_path == "burn":
        return [ask("burn", limit=50, **params), ask("burn_curve", **params)]
    if url_path == "sessions":
        return [ask("sessions", limit=SESSIONS_LISTED, **params)]
    if url_path == "budgets":
        return [ask("budgets", **params)]
    if url_path == "tools":
        return [tools_question(**params), tools_question(by_agent=True, **params)]
    if url_path == "alerts":
        return [ask("alerts")]
    return []


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


@st.cache_data(ttl=60, show_spinner=False, max_entries=16)
def _checked(key: str, _source: Source) -> bool:
    _source.check()
    return True


def check_source() -> bool:
    """Show the error state and return False when the source cannot be read at all.

    A success is remembered for a minute (a page's own questions report an outage meanwhile);
    a failure is asked again on the next run.
    """
    try:
        _checked(source().key, source())
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
    """``0.123`` -> ``'12.3%'``; missing -> ``'—'`` (:func:`loopsight.dashboard.format.pct`)."""
    return fmt.pct(value)


_UNVALIDATED: dict[type, type] = {}


def _to_dict_unvalidated(self: Any, *args: Any, validate: bool = False, **kwargs: Any) -> Any:
    return super(type(self), self).to_dict(*args, validate=validate, **kwargs)


def unvalidated(chart: Any) -> Any:
    """The same chart, turned into its Vega-Lite spec without Altair's JSON-schema validation.

    Streamlit converts a chart with ``to_dict()``, which validates the whole spec against the
    Vega-Lite schema: a third of the run page's script time for its waterfall. The chart
    functions' specs are validated by their tests (``charts.*(...).to_dict()``) instead.
    """
    kind = type(chart)
    fast = _UNVALIDATED.get(kind)
    if fast is None:
        fast = _UNVALIDATED[kind] = type(f"Unvalidated{kind.__name__}", (kind,), {"to_dict": _to_dict_unvalidated})
    clone = chart.copy(deep=False)
    object.__setattr__(clone, "__class__", fast)  # Altair keeps attributes set the usual way as chart properties
    return clone


def chart(figure: Any, **kwargs: Any) -> Any:
    """``st.altair_chart`` of a chart function's chart, as wide as its column (see :func:`unvalidated`)."""
    return st.altair_chart(unvalidated(figure), **{"width": "stretch", **kwargs})


def live(render: Callable[[], None]) -> None:
    """Run a page's body as a fragment: its own widgets rerun only it, and with the sidebar's
    auto-refresh on it reruns every few seconds (the sidebar and the other pages stay put)."""
    every = current().refresh

    def run() -> None:
        ctx = get_script_run_ctx(suppress_warning=True)
        if ctx is not None and ctx.fragment_ids_this_run:
            # A rerun of this fragment alone (a refresh, a widget of the page): the app did not prefetch.
            prefetch(questions(st.session_state.get("_page", ""), current()))
        render()

    st.fragment(run, run_every=every)()


def refresh_caption() -> str:
    """``refreshes every 30 s`` or ``auto-refresh off``, for a live panel's caption."""
    every = current().refresh
    return f"refreshes every {fmt.seconds(every)}" if every else "auto-refresh off"


def open_run(trace_id: str) -> None:
    """Open a run's timeline in this tab (the filters stay in the URL)."""
    st.switch_page(page("run"), query_params={**_kept_params(), "run": trace_id})


def _kept_params() -> dict[str, str]:
    kept = {}
    for name in ("range", "from", "to", "agent", "service", "refresh"):
        value = st.query_params.get(name)
        if value:
            kept[name] = value
    return kept


ROW_PX = 35


def rows_height(rows: int, max_rows: int = 25) -> int:
    """The height of a dataframe showing ``rows`` rows (up to ``max_rows``) without an inner scroll bar."""
    return ROW_PX * (min(max(rows, 1), max_rows) + 1) + 3


def run_table(
    frame: pd.DataFrame,
    column_config: dict[str, Any],
    *,
    key: str,
    max_rows: int = 25,
    colored: dict[str, str] | None = None,
    column_order: Sequence[str] | None = None,
    pinned: bool = True,
) -> None:
    """A table of runs (a ``trace_id`` column): clicking a row, or any cell of it, opens that run here.

    ``colored`` maps columns to their meaning in :mod:`loopsight.dashboard.colors` (``status``,
    ``termination_reason``, ``loop_kind``...): they are shown as labels in that meaning's colours
    (the column itself stays as it is in the data). ``column_order`` picks the columns shown (the
    full ``trace_id`` may stay hidden behind a short id).
    """
    config = {
        "trace_id": st.column_config.TextColumn(
            "run (trace id)", width=255, pinned=pinned, help="Click a row to open its timeline."
        ),
        **column_config,
    }
    order = list(column_order) if column_order is not None else list(frame.columns)
    data = frame
    for column, meaning in (colored or {}).items():
        if column not in frame:
            continue
        # A label column in the meaning's fixed colours (no Styler: a styled 1,000-row table costs
        # ~70 ms of CSS per run); the plain column stays in the data for whoever reads it.
        shown = f"{column}_label"
        data = data.assign(**{shown: [[] if fmt.missing(v) else [str(v)] for v in frame[column]]})
        config[shown] = label_column(meaning, config.get(column))
        order = [shown if c == column else c for c in order]
    event = st.dataframe(
        data,
        hide_index=True,
        width="stretch",
        height=rows_height(len(frame), max_rows),
        column_config=config,
        on_select="rerun",
        selection_mode="single-cell",
        key=key,
        column_order=order,
    )
    selection = getattr(event, "selection", None)
    if selection is None:
        return
    rows = [cell[0] for cell in selection.get("cells") or []]
    if rows and 0 <= rows[0] < len(frame):
        open_run(str(frame.iloc[rows[0]]["trace_id"]))


def label_column(meaning: str, like: Any = None) -> Any:
    """A column of coloured labels, one fixed colour per value of ``meaning``; label and width from ``like``."""
    from loopsight.dashboard import colors

    base = dict(like or {})
    palette = colors.SCALES[meaning]
    return st.column_config.MultiselectColumn(
        base.get("label"),
        width=base.get("width"),
        help=base.get("help"),
        options=list(palette),
        color=list(palette.values()),
    )


def table(frame: pd.DataFrame, column_config: dict[str, Any] | None = None, max_rows: int = 25, **kwargs: Any) -> None:
    """A read-only table as tall as its rows (up to ``max_rows``): no ten-row scroll box."""
    st.dataframe(
        frame,
        hide_index=True,
        width="stretch",
        height=rows_height(len(frame), max_rows),
        column_config=column_config,
        **kwargs,
    )


def agent_names(shared: Filters | None = None) -> list[str]:
    """The agents with runs in the window (the service filter kept, the agent filter not), counted on the
    server (``/api/v1/values``): a few rows, not a list of runs."""
    return picker_values("agent", shared)


def with_agents(rows: list[dict[str, Any]], agent: str | None = None) -> pd.DataFrame:
    """``rows`` (loops, stalls: each names its run's agent) as a frame whose ``agent`` column is never empty:
    the row's own agent, else the agent filter in effect, else a dash (a stuck run's agent is not known
    until its run span arrives)."""
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame.assign(agent=pd.Series(dtype="object"))
    own = frame["agent"] if "agent" in frame else pd.Series([None] * len(frame), index=frame.index)
    return frame.assign(
        agent=[fmt.MISSING if fmt.missing(a) and not agent else (agent if fmt.missing(a) else a) for a in own]
    )


def tools(by_agent: bool = False, **params: Any) -> list[dict[str, Any]] | None:
    """Tool statistics, per tool or per tool and agent (the API's ``group_by=agent``), shown in place on failure."""
    method, _, asked = tools_question(by_agent, **params)
    return load(method, what="Tool statistics", **asked)


def run_timeline(
    shared: Filters,
    status: str | None = None,
    reason: str | None = None,
    color: str = "status",
    starts: pd.Series | None = None,
    extra: dict[str, Any] | None = None,
) -> tuple[pd.DataFrame, int, tuple[datetime, datetime]] | None:
    """Runs per bucket over the window, counted on the server (``/api/v1/terminations``), and the part of
    the window they cover: ``(frame, bucket seconds, (start, end))``; ``None`` if that failed (shown).

    ``starts``: the start times of every run shown, when the page lists them all: the buckets are then
    sized to them at once, instead of narrowed down question by question. ``extra``: the Runs page's
    own filters (a tool, a token floor, a search), counted on the server as the runs list counts them."""
    start, end = shared.window()
    asked = {**shared.params(), **{k: v for k, v in (extra or {}).items() if v is not None}}
    bucket = shared.bucket_seconds
    if starts is not None and len(starts.dropna()):
        low, high = frames.fitted_window(starts.dropna(), starts.dropna(), (start, end))
        narrower = bucket_seconds(max((high - low).total_seconds(), 60))
        if narrower < bucket:
            bucket, since = narrower, low.floor(f"{narrower}s").to_pydatetime()
            answer = load("terminations", what="Runs over time", bucket_seconds=bucket, **{**asked, "since": since})
            if answer is None:
                return None
            rows = _termination_rows(answer)
            if not rows.empty:
                low, high = frames.fitted_window(
                    rows["bucket"], rows["bucket"] + pd.Timedelta(seconds=bucket), (start, end)
                )
                counted = frames.runs_from_terminations(rows, bucket, color=color, status=status, reason=reason)
                return counted, bucket, (low.to_pydatetime(), high.to_pydatetime())
            bucket = shared.bucket_seconds
    answer = load("terminations", what="Runs over time", bucket_seconds=bucket, **asked)
    if answer is None:
        return None
    rows = _termination_rows(answer)
    if rows.empty:
        return rows, bucket, (start or end, end)
    low, high = frames.fitted_window(rows["bucket"], rows["bucket"] + pd.Timedelta(seconds=bucket), (start, end))
    for _ in range(3):
        narrower = bucket_seconds(max((high - low).total_seconds(), 60))
        if narrower >= bucket:
            break
        # The data covers a small part of the window: count again in buckets that fit that part.
        since = low.floor(f"{narrower}s").to_pydatetime()
        finer = fetch_quiet("terminations", bucket_seconds=narrower, **{**asked, "since": since})
        finer_rows = _termination_rows(finer) if finer is not None else None
        if finer_rows is None or finer_rows.empty:
            break
        rows, bucket = finer_rows, narrower
        low, high = frames.fitted_window(rows["bucket"], rows["bucket"] + pd.Timedelta(seconds=bucket), (start, end))
    counted = frames.runs_from_terminations(rows, bucket, color=color, status=status, reason=reason)
    return counted, bucket, (low.to_pydatetime(), high.to_pydatetime())


def _termination_rows(answer: Any) -> pd.DataFrame:
    rows = pd.DataFrame(frames.records(answer, "terminations"))
    if rows.empty:
        return pd.DataFrame(columns=["bucket", "termination_reason", "runs", "ok"])
    rows["bucket"] = frames.to_time(rows["bucket"])
    return rows


def window_total(answer_totals: Iterable[dict[str, Any]]) -> int:
    """All runs of a terminations answer's ``totals``."""
    return int(sum(int(t.get("runs") or 0) for t in answer_totals))
