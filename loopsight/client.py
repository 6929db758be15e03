"""The one read client: the collector's query API, a DuckDB file or a ClickHouse store, one interface.

The dashboard, ``loopsight alerts check`` and ``loopsight runs`` read through it.
:class:`ApiSource` / :class:`DuckDBSource` / :class:`StoreSource` have the same methods,
answering in the shapes of the ``/api/v1/*`` routes (a store is read through the analytics,
the API through HTTP); :func:`open_source` picks one from the command-line flags.

Example:
    >>> source = ApiSource("http://127.0.0.1:4318")
    >>> source.describe()
    'collector http://127.0.0.1:4318'
    >>> source.runs(limit=5, agent="order-assistant")  # doctest: +SKIP
    [{'trace_id': '...', 'agent': 'order-assistant', 'status': 'ok', ...}]
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from loopsight import analytics
from loopsight.analytics.alert_state import alert_series, alerts_overview
from loopsight.analytics.metrics import Measurement, MetricSpec, measure
from loopsight.errors import LoopsightError, is_lock_conflict

DEFAULT_COLLECTOR_URL = "http://127.0.0.1:4318"
# A separate variable from the collector's LOOPSIGHT_DB: a shell that sets LOOPSIGHT_DB for
# the collector must not make the dashboard open (and fail on the lock of) the same file.
DB_ENV = "LOOPSIGHT_DASHBOARD_DB"
COLLECTOR_ENV = "LOOPSIGHT_COLLECTOR_URL"
STORE_ENV = "LOOPSIGHT_DASHBOARD_STORE"
TOKEN_ENV = "LOOPSIGHT_TOKEN"


class SourceError(LoopsightError):
    """The data source answered with an error; the message says what to do."""


class SourceUnreachable(SourceError):
    """The collector cannot be reached (or the DuckDB file cannot be opened)."""


class OutdatedStore(SourceUnreachable):
    """The DuckDB file was written by an older loopsight: its schema needs ``loopsight db upgrade``."""


class AuthRequired(SourceError):
    """The collector wants a (different) bearer token."""


class NotAvailable(SourceError):
    """This source does not offer that question (yet): an older collector, a missing module."""


_HTTP: httpx.Client | None = None
_HTTP_LOCK = threading.Lock()


def _http() -> httpx.Client:
    """One connection pool per process (a new client per request costs a TLS context each time:
    ~5 % of a dashboard page's script time)."""
    global _HTTP
    with _HTTP_LOCK:
        if _HTTP is None:
            _HTTP = httpx.Client()
        return _HTTP


def _iso(value: datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.isoformat(timespec="seconds") + "Z"


def _clean(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None and v != ""}


@dataclass(frozen=True)
class ApiSource:
    """Reads the collector's ``/api/v1/*`` routes over HTTP (bearer token if given).

    Example:
        >>> ApiSource("http://127.0.0.1:4318/", token="s3cret").url
        'http://127.0.0.1:4318'
    """

    url: str = DEFAULT_COLLECTOR_URL
    token: str | None = field(default=None, repr=False)
    timeout: float = 10.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "url", self.url.rstrip("/"))

    @property
    def key(self) -> str:
        """Identifies the source in the cache (the token is hashed by the cache, never shown)."""
        return f"api|{self.url}|{self.token or ''}"

    kind = "collector"

    @property
    def target(self) -> str:
        return self.url

    def describe(self) -> str:
        return f"{self.kind} {self.target}"

    def _get(self, path: str, params: dict[str, Any] | None = None, key: str | None = None) -> Any:
        """The JSON object ``path`` answers (``key``: its member), a :class:`SourceError` when the
        answer is not one loopsight's collector gives (a URL of another service, say)."""
        body = self._body(path, params)
        if not isinstance(body, dict) or (key is not None and key not in body):
            wanted = f"an object with {key!r}" if key else "an object"
            raise SourceError(
                f"{self.url}{path} answered JSON that is not {wanted}: is {self.url} a loopsight collector?"
            )
        return body if key is None else body[key]

    def _body(self, path: str, params: dict[str, Any] | None = None) -> Any:
        query = {k: _iso(v) if isinstance(v, datetime) else v for k, v in _clean(params or {}).items()}
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        target = f"{self.url}{path}"
        try:
            response = _http().get(target, params=query, headers=headers, timeout=self.timeout)
        except httpx.TimeoutException:
            raise SourceUnreachable(
                f"the collector at {self.url} did not answer {path} within {self.timeout:g} s"
            ) from None
        except httpx.HTTPError as exc:
            raise SourceUnreachable(f"cannot reach the collector at {self.url} ({type(exc).__name__}: {exc})") from None
        if response.status_code == 401:
            hint = "the token given is wrong" if self.token else "give its token with --token (or LOOPSIGHT_TOKEN)"
            raise AuthRequired(f"the collector at {self.url} wants a bearer token: {hint}")
        if response.status_code == 404:
            raise NotAvailable(f"the collector at {self.url} has no {path} route (an older collector?)")
        try:
            body = response.json()
        except ValueError:
            raise SourceError(f"{target} answered {response.status_code} with a body that is not JSON") from None
        if response.status_code != 200:
            message = body.get("error") or body.get("message") if isinstance(body, dict) else None
            raise SourceError(f"{path} answered {response.status_code}: {message or body}")
        return body

    def check(self) -> None:
        """Raise :class:`SourceUnreachable` unless ``/healthz`` answers, :class:`AuthRequired` on a token mismatch."""
        self._get("/healthz")
        self._get("/api/v1/runs", {"limit": 1})

    def runs(self, **params: Any) -> list[dict[str, Any]]:
        return self._get("/api/v1/runs", params, "runs")

    def runs_page(self, **params: Any) -> dict[str, Any]:
        """``{"runs": [...], "total": N}``: a page of runs and how many the filters keep."""
        return self._get("/api/v1/runs", params)

    def values(self, field: str, **params: Any) -> list[dict[str, Any]]:
        return self._get("/api/v1/values", {"field": field, **params}, "values")

    def run(self, trace_id: str) -> dict[str, Any]:
        """The trace's runs, spans and steps, and whether it is stuck; empty lists when the
        collector stores no span of it (404)."""
        try:
            return self._get(f"/api/v1/runs/{trace_id}")
        except NotAvailable:  # the route is as old as the API: its 404 means no spans for this trace
            return {"runs": [], "spans": [], "steps": [], "stuck": False}

    def overview(self, **params: Any) -> dict[str, Any]:
        return self._get("/api/v1/overview", params)

    def terminations(self, bucket_seconds: int | None = None, **params: Any) -> Any:
        return self._get("/api/v1/terminations", {"bucket": bucket_seconds, **params})

    def tools(self, **params: Any) -> list[dict[str, Any]]:
        return self._get("/api/v1/tools", params, "tools")

    def loops(self, **params: Any) -> list[dict[str, Any]]:
        return self._get("/api/v1/loops", params, "loops")

    def loop_counts(self, **params: Any) -> dict[str, int]:
        return self._get("/api/v1/loops", {**params, "limit": 0}, "counts")

    def loops_page(self, **params: Any) -> dict[str, Any]:
        """``{"loops": [...], "counts": {kind: n}, "total": N, "wasted_tokens", "wasted_cost_usd", ...}``: the
        loops listed, how many the filters keep and what they wasted (:func:`loopsight.analytics.loops_page`)."""
        return self._get("/api/v1/loops", params)

    def loops_over_time(self, bucket_seconds: int = 3600, **params: Any) -> list[dict[str, Any]]:
        return self._get("/api/v1/loops/over_time", {"bucket": bucket_seconds, **params}, "buckets")

    def looping_tools(self, **params: Any) -> list[dict[str, Any]]:
        """The tools that loop most over the window, loops per kind (``/api/v1/loops/tools``)."""
        return self._get("/api/v1/loops/tools", params, "tools")

    def stalls(self, **params: Any) -> list[dict[str, Any]]:
        return self._get("/api/v1/stalls", params, "stalls")

    def stall_counts(self, **params: Any) -> dict[str, int]:
        return self._get("/api/v1/stalls", {**params, "limit": 0}, "counts")

    def stalls_page(self, **params: Any) -> dict[str, Any]:
        """``{"stalls": [...], "counts": {kind: n}}``: the stalls listed and how many of each kind the filters keep."""
        return self._get("/api/v1/stalls", params)

    def sessions(self, **params: Any) -> list[dict[str, Any]]:
        return self._get("/api/v1/sessions", params, "sessions")

    def burn(self, **params: Any) -> dict[str, list[dict[str, Any]]]:
        return self._get("/api/v1/burn", params)

    def burn_curve(self, **params: Any) -> Any:
        return self._get("/api/v1/burn/curve", params)

    def budgets(self, by_service: bool = False, **params: Any) -> dict[str, list[dict[str, Any]]]:
        answer = self._get("/api/v1/budgets", {"group_by": "service" if by_service else None, **params})
        if not isinstance(answer.get("agents"), list):
            raise SourceError(
                f"{self.url}/api/v1/budgets answered without a list of agents: is it a loopsight collector?"
            )
        return answer

    def budget_runs(self, only_cut: bool = True, **params: Any) -> list[dict[str, Any]]:
        return self._get("/api/v1/budgets/runs", {"only_cut": str(only_cut).lower(), **params}, "runs")

    def models(self, **params: Any) -> list[dict[str, Any]]:
        """Per (provider, model): calls, tokens, cost and the prices applied (``/api/v1/models``)."""
        return self._get("/api/v1/models", params, "models")

    def alerts(self) -> dict[str, list[dict[str, Any]]]:
        return self._get("/api/v1/alerts")

    def alert_series(self, rule: str, **params: Any) -> list[dict[str, Any]]:
        return self._get("/api/v1/alerts/series", {"rule": rule, **params}, "series")

    def measure(self, spec: MetricSpec, since: datetime, until: datetime) -> Measurement:
        """An alert metric over ``[since, until)``, measured by the collector (``/api/v1/alerts/metric``)."""
        params: dict[str, Any] = {"metric": spec.metric, "since": since, "until": until, **spec.filters()}
        if "stuck_after" in params:
            params["stuck_after"] = max(1, round(params["stuck_after"]))
        try:
            return Measurement.from_dict(self._get("/api/v1/alerts/metric", params))
        except (TypeError, AttributeError) as exc:
            raise SourceError(f"the collector at {self.url} sent an unreadable measurement: {exc}") from None


class _AnalyticsQuestions:
    """The questions answered by the analytics functions on a store reader (``_call``)."""

    _measured: dict[Any, Measurement]  # each (metric, window) measured once per source

    def _call(self, function: Callable[..., Any], *args: Any, **params: Any) -> Any:
        raise NotImplementedError

    def runs(self, **params: Any) -> list[dict[str, Any]]:
        if params.pop("sort", None) == "tokens":  # as /api/v1/runs?sort=tokens answers
            keep = ("limit", "agent", "service", "since", "until")
            return self._call(analytics.top_runs_by_tokens, **{k: v for k, v in params.items() if k in keep})
        return self._call(analytics.list_runs, **params)

    def runs_page(self, **params: Any) -> dict[str, Any]:
        counted = {k: v for k, v in params.items() if k not in ("limit", "offset")}
        return {"runs": self.runs(**params), "total": self._call(analytics.count_runs, **counted)}

    def values(self, field: str, **params: Any) -> list[dict[str, Any]]:
        return self._call(analytics.field_values, field, **params)

    def run(self, trace_id: str) -> dict[str, Any]:
        return self._call(analytics.trace_detail, trace_id)

    def overview(self, **params: Any) -> dict[str, Any]:
        return self._call(analytics.overview, **params)

    def terminations(self, **params: Any) -> Any:
        return self._call(analytics.terminations, **params)

    def tools(self, **params: Any) -> list[dict[str, Any]]:
        return self._call(analytics.tool_stats, **params)

    def loops(self, **params: Any) -> list[dict[str, Any]]:
        return self._call(analytics.loops, **params)

    def loop_counts(self, **params: Any) -> dict[str, int]:
        return self._call(analytics.loop_counts, **params)

    def loops_page(self, **params: Any) -> dict[str, Any]:
        return self._call(analytics.loops_page, **params)

    def loops_over_time(self, bucket_seconds: int = 3600, **params: Any) -> list[dict[str, Any]]:
        return self._call(analytics.loops_over_time, bucket_seconds=bucket_seconds, **params)

    def looping_tools(self, **params: Any) -> list[dict[str, Any]]:
        return self._call(analytics.top_looping_tools, **params)

    def stalls(self, **params: Any) -> list[dict[str, Any]]:
        return self._call(analytics.stalls, **params)

    def stall_counts(self, **params: Any) -> dict[str, int]:
        return self._call(analytics.stall_counts, **params)

    def stalls_page(self, **params: Any) -> dict[str, Any]:
        counted = {k: v for k, v in params.items() if k != "limit"}
        return {"stalls": self.stalls(**params), "counts": self.stall_counts(**counted)}

    def sessions(self, **params: Any) -> list[dict[str, Any]]:
        return self._call(analytics.sessions, **params)

    def burn(self, **params: Any) -> dict[str, list[dict[str, Any]]]:
        return self._call(analytics.burn, **params)

    def burn_curve(self, **params: Any) -> Any:
        return self._call(analytics.burn_curve, **params)

    def budgets(self, **params: Any) -> dict[str, list[dict[str, Any]]]:
        return self._call(analytics.budgets, **params)

    def budget_runs(self, **params: Any) -> list[dict[str, Any]]:
        return self._call(analytics.budget_replay, **params)

    def models(self, **params: Any) -> list[dict[str, Any]]:
        """Per (provider, model): calls, tokens, cost and the prices applied."""
        return self._call(analytics.models, **params)

    def alerts(self) -> dict[str, list[dict[str, Any]]]:
        return self._call(alerts_overview)

    def alert_series(self, rule: str, **params: Any) -> list[dict[str, Any]]:
        return self._call(alert_series, rule, **params)

    def measure(self, spec: MetricSpec, since: datetime, until: datetime) -> Measurement:
        """An alert metric over ``[since, until)``, measured on the store."""
        return self._call(measure, spec, since, until, self._measured)


@dataclass(frozen=True)
class DuckDBSource(_AnalyticsQuestions):
    """Reads a DuckDB file directly, read-only, through the analytics functions.

    Only for a file no collector holds (DuckDB allows one writer process or many readers).

    Example:
        >>> DuckDBSource("/data/copy.duckdb").describe()
        'DuckDB file /data/copy.duckdb'
    """

    path: str
    _measured: dict[Any, Measurement] = field(default_factory=dict, compare=False, repr=False)

    @property
    def key(self) -> str:
        return f"duckdb|{self.path}"

    kind = "DuckDB file"

    @property
    def target(self) -> str:
        return self.path

    def describe(self) -> str:
        return f"{self.kind} {self.target}"

    def _connect(self) -> Any:
        import duckdb

        if not Path(self.path).is_file():
            raise SourceUnreachable(
                f"there is no DuckDB file at {self.path}: {'it is a directory' if Path(self.path).is_dir() else 'it does not exist'}"
                " (give --db PATH of a loopsight file, or --collector URL)"
            )
        try:
            con = duckdb.connect(self.path, read_only=True)
        except duckdb.Error as exc:
            text = str(exc)
            if is_lock_conflict(text):
                raise SourceUnreachable(
                    f"{self.path} is held by a running collector; read it through the collector instead "
                    f"(--collector URL): {text}"
                ) from None
            raise SourceUnreachable(f"cannot open {self.path} read-only: {text}") from None
        try:
            con.execute("SET enable_external_access = false")
            has_spans = con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = 'spans'"
            ).fetchall()[0][0]
        except duckdb.Error as exc:
            con.close()
            raise SourceError(f"cannot read {self.path}: {exc}") from None
        if not has_spans:
            con.close()
            raise SourceError(
                f"{self.path} has no spans table: not a loopsight database "
                "(`loopsight db upgrade --db PATH` makes a DuckDB file without tables one)"
            )
        outdated = _outdated(con)
        if outdated:
            con.close()
            raise OutdatedStore(
                f"{self.path} is at schema revision {outdated[0]}, this loopsight reads revision {outdated[1]}: "
                f"run `loopsight db upgrade --db {self.path}` (with no collector holding the file; "
                "a collector opening it upgrades it too)"
            )
        return con

    def _call(self, function: Callable[..., Any], *args: Any, **params: Any) -> Any:
        import duckdb

        from loopsight.stores.duckdb_store import DuckDBReader

        name = function.__name__
        con = self._connect()
        try:
            return function(DuckDBReader(con), *args, **_clean(params))
        except duckdb.CatalogException as exc:
            raise NotAvailable(
                f"{self.path} has no tables for {name} (written by an older collector?): {exc}"
            ) from None
        except (duckdb.Error, ValueError) as exc:
            raise SourceError(f"{name} failed on {self.path}: {exc}") from None
        finally:
            con.close()

    def check(self) -> None:
        self._connect().close()


def _outdated(con: Any) -> tuple[str, str] | None:
    """``(file revision, newest revision)`` when the file's schema is older than this code's, else ``None``.

    Example:
        >>> _outdated(duckdb.connect())  # no alembic_version table: an unmanaged file  # doctest: +SKIP
        ('none', '0005')
    """
    from loopsight.migrations.runner import head

    latest = head()
    found = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'alembic_version'"
    ).fetchone()[0]
    revision = con.execute("SELECT max(version_num) FROM alembic_version").fetchone()[0] if found else None
    # Revisions are zero-padded numbers; a newer file than this code is read as it is.
    if latest is None or (revision is not None and revision >= latest):
        return None
    return (revision or "none", latest)


_STORE_CONNECTIONS: dict[str, Any] = {}


@dataclass(frozen=True)
class StoreSource(_AnalyticsQuestions):
    """Reads a ClickHouse store (``clickhouse://…`` server or ``chdb:///dir``) through the analytics functions.

    One connection per store URL is kept for the process (opening one applies loopsight's
    ClickHouse migrations); the analytics pick their ClickHouse SQL for it.

    Example:
        >>> StoreSource("clickhouse://loop:secret@ch.internal:8123/otel").describe()
        'ClickHouse store clickhouse://loop:***@ch.internal:8123/otel'
    """

    url: str
    _measured: dict[Any, Measurement] = field(default_factory=dict, compare=False, repr=False)

    @property
    def key(self) -> str:
        return f"store|{self.url}"

    kind = "ClickHouse store"

    @property
    def target(self) -> str:
        from loopsight.stores import StoreURLError, parse_store_url
        from loopsight.stores.url import shown

        try:
            return parse_store_url(self.url).redacted()
        except StoreURLError:
            return shown(self.url)

    def describe(self) -> str:
        return f"{self.kind} {self.target}"

    def _connect(self) -> Any:
        from loopsight.stores import StoreError, StoreURLError, open_reader

        con = _STORE_CONNECTIONS.get(self.url)
        if con is None:
            try:
                con = _STORE_CONNECTIONS[self.url] = open_reader(self.url)
            except (StoreURLError, StoreError) as exc:
                raise SourceUnreachable(f"cannot open the store {self.target}: {exc}") from None
        return con.cursor()

    def _call(self, function: Callable[..., Any], *args: Any, **params: Any) -> Any:
        from loopsight.stores.clickhouse import ClickHouseError

        name = function.__name__
        con = self._connect()
        try:
            return function(con, *args, **_clean(params))
        except ClickHouseError as exc:
            raise SourceError(f"{name} failed on {self.target}: {exc}") from None
        except ValueError as exc:
            raise SourceError(f"{name} failed on {self.target}: {exc}") from None

    def check(self) -> None:
        self._connect()

    def check_folder(self) -> None:
        """For an embedded chdb store, :meth:`check` without starting its engine (chdb gives its
        folder to the first process that opens it: a launcher checks, the dashboard opens)."""
        from loopsight.stores import StoreError, check_chdb_store

        try:
            check_chdb_store(self.url, unlocked=True)
        except StoreError as exc:
            raise SourceUnreachable(f"cannot open the store {self.target}: {exc}") from None


Source = ApiSource | DuckDBSource | StoreSource


def store_source(url: str) -> DuckDBSource | StoreSource:
    """The source for a store URL: a DuckDB file (``duckdb:///path`` or a path) or a ClickHouse store.

    Example:
        >>> store_source("duckdb:///data/copy.duckdb")
        DuckDBSource(path='/data/copy.duckdb')
        >>> store_source("chdb:///var/lib/ch")
        StoreSource(url='chdb:///var/lib/ch')
    """
    from loopsight.stores import StoreURLError, parse_store_url

    try:
        parsed = parse_store_url(url)
    except StoreURLError:
        return StoreSource(url)  # the error is shown by the page, where the user looks
    return DuckDBSource(parsed.path) if parsed.scheme == "duckdb" else StoreSource(url)


def source_from_env(environ: dict[str, str] | None = None) -> Source:
    """The source ``launch()`` chose: ``LOOPSIGHT_DASHBOARD_STORE``, ``LOOPSIGHT_DASHBOARD_DB``, else the collector URL.

    Example:
        >>> source_from_env({"LOOPSIGHT_COLLECTOR_URL": "http://127.0.0.1:9999"})
        ApiSource(url='http://127.0.0.1:9999', timeout=10.0)
        >>> source_from_env({"LOOPSIGHT_DASHBOARD_STORE": "chdb:///var/lib/ch"})
        StoreSource(url='chdb:///var/lib/ch')
    """
    env = os.environ if environ is None else environ
    if env.get(STORE_ENV):
        return store_source(env[STORE_ENV])
    if env.get(DB_ENV):
        return DuckDBSource(env[DB_ENV])
    return ApiSource(env.get(COLLECTOR_ENV) or DEFAULT_COLLECTOR_URL, env.get(TOKEN_ENV) or None)


def open_source(
    collector: str | None = None, db: str | None = None, store: str | None = None, token: str | None = None
) -> Source:
    """The source for one of ``--collector``, ``--db``, ``--store`` (the collector at its default URL with none).

    Example:
        >>> open_source(db="/data/copy.duckdb")
        DuckDBSource(path='/data/copy.duckdb')
    """
    if store:
        return store_source(store)
    if db:
        return DuckDBSource(db)
    return ApiSource(collector or DEFAULT_COLLECTOR_URL, token)
