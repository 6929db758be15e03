"""A ClickHouse connection with the small DuckDB-like surface the analytics use.

``execute(sql, params)`` runs ClickHouse SQL and returns a result (``.fetchall()`` as
tuples, ``.arrow()`` as Arrow); ``rows(sql, params)`` runs a DuckDB-dialect question
translated (the :class:`~loopsight.stores.protocol.Reader`). SQL uses ClickHouse's typed placeholders ``{name:Type}``; parameters are
Python values (``None``, str, int, float, bool, datetime as naive UTC, lists).
Results come back as Python values: naive UTC ``datetime`` for ``DateTime64``, ``dict``
for ``Map``, ``list`` for ``Array``.

Two engines behind one class:

- chdb: the ClickHouse engine in-process (one data directory per process).
- a server over HTTP through ``clickhouse-connect``.

Example:
    >>> con = connect_chdb("/tmp/loopsight-doc-ch")  # doctest: +SKIP
    >>> con.execute("SELECT {n:Int64} + 1 AS x", {"n": 41}).fetchall()  # doctest: +SKIP
    [(42,)]
"""

from __future__ import annotations

import atexit
import contextlib
import io
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from loopsight.errors import LoopsightError
from loopsight.stores.files import check_unlocked
from loopsight.stores.url import StoreURL

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*):")


class ClickHouseError(LoopsightError):
    """A ClickHouse statement failed or the engine cannot be reached; the message says why."""


@contextlib.contextmanager
def _failing(what: str = "") -> Iterator[None]:
    """An engine's exception as a :class:`ClickHouseError` with its message, ``what`` before it."""
    try:
        yield
    except Exception as exc:  # chdb raises RuntimeError, clickhouse-connect its own, with the engine's message
        raise ClickHouseError(f"{what}{str(exc).strip()}") from None


def format_param(value: Any) -> str:
    """A Python value in ClickHouse's text form for a ``{name:Type}`` parameter: clickhouse-connect's
    binding, a datetime as naive UTC with its microseconds (see :func:`_bound`).

    Example:
        >>> format_param(None), format_param(["a", "it's"]), format_param(datetime(2024, 1, 2, 3, 4, 5, 6))
        ('\\\\N', "['a', 'it\\\\'s']", '2024-01-02 03:04:05.000006')
    """
    from clickhouse_connect.driver.binding import format_bind_value

    return str(format_bind_value(_bound({"v": value})["v"], UTC))


def _bound(params: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters for clickhouse-connect's binding: a datetime as ``DateTime64`` in UTC (it drops microseconds otherwise)."""
    from clickhouse_connect.driver.binding import DT64Param

    return {k: DT64Param(v, UTC) if isinstance(v, datetime) else v for k, v in params.items()}


def used_params(sql: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """Only the parameters the statement names (ClickHouse rejects unknown ones on some paths)."""
    params = params or {}
    names = set(_PLACEHOLDER.findall(sql))
    if missing := names - params.keys():
        raise ClickHouseError(f"missing query parameter(s): {', '.join(sorted(missing))}")
    return {k: v for k, v in params.items() if k in names}


def _plain_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t):
        return pa.timestamp("us")
    if pa.types.is_map(t):
        return pa.map_(_plain_type(t.key_type), _plain_type(t.item_type))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(_plain_type(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _plain_type(f.type)) for f in t])
    if pa.types.is_dictionary(t):
        return _plain_type(t.value_type)
    return t


class Result:
    """The answer to one statement: its rows (:meth:`fetchall`) or its Arrow table (:meth:`arrow`)."""

    def __init__(self, table: pa.Table | None) -> None:
        self.table = table if table is not None else pa.table({})

    def fetchall(self) -> list[tuple[Any, ...]]:
        """All rows as tuples of Python values."""
        columns = []
        for column in self.table.columns:
            target = _plain_type(column.type)
            if target != column.type:
                column = column.cast(target, safe=False)
            columns.append(column.to_pylist(maps_as_pydicts="lossy"))  # a Map as a dict, as DuckDB gives it
        return list(zip(*columns, strict=False)) if columns else []

    def arrow(self) -> pa.Table:
        """The raw Arrow table."""
        return self.table


class _Engine:
    """One way to reach ClickHouse: run a statement to Arrow, insert Arrow."""

    materialized_ctes: bool | None = None  # the server has WITH x AS MATERIALIZED (asked once)

    def query_arrow(self, sql: str, params: dict[str, Any]) -> pa.Table:
        raise NotImplementedError

    def command(self, sql: str) -> None:
        raise NotImplementedError

    def insert_arrow(self, table: str, data: pa.Table) -> None:
        raise NotImplementedError


_CHDB_LOCK = threading.RLock()
_CHDB: dict[str, Any] = {}
_CHDB_CURRENT_DB = "default"


@atexit.register
def _close_chdb() -> None:
    # Closed before the interpreter tears down: left to its destructors, chdb's engine shuts
    # down after its thread pools are gone and the process ends on SIGSEGV (exit 139).
    with _CHDB_LOCK:
        while _CHDB:
            _, con = _CHDB.popitem()
            with contextlib.suppress(Exception):  # at exit there is no one left to tell
                con.close()


class _ChdbEngine(_Engine):
    """The embedded engine. chdb holds one data directory per process, shared by all users."""

    def __init__(self, path: str, database: str = "default") -> None:
        import chdb

        with _CHDB_LOCK:
            if _CHDB and path not in _CHDB:
                other = next(iter(_CHDB))
                raise ClickHouseError(
                    f"chdb already has {other!r} open in this process; one chdb data directory per process (asked for {path!r})"
                )
            if path not in _CHDB:
                check_unlocked(path)
                with _failing(f"cannot open chdb directory {path!r}: "):
                    _CHDB[path] = chdb.connect(path)
        self.path = path
        self.database = database
        self._con = _CHDB[path]
        if database != "default":
            with _CHDB_LOCK, _failing(f"cannot create database {database!r}: "):
                self._con.query(f"CREATE DATABASE IF NOT EXISTS {database}", "CSV")

    def _use(self) -> None:
        # One embedded engine per process: statements of every handle share it, so each
        # one first selects its database (a no-op when it is already current).
        global _CHDB_CURRENT_DB
        if self.database != _CHDB_CURRENT_DB:
            self._con.query(f"USE {self.database}", "CSV")
            _CHDB_CURRENT_DB = self.database

    def query_arrow(self, sql: str, params: dict[str, Any]) -> pa.Table:
        text = {k: format_param(v) for k, v in params.items()}  # as clickhouse-connect sends them to a server
        with _CHDB_LOCK, _failing():
            self._use()
            try:
                return self._con.query(sql, "ArrowTable", params=text or None)
            except Exception:
                # A statement that fails while it runs leaves its Arrow bytes in chdb's output (4.4), ahead
                # of the next statement's answer ("Message metadata too long"): a throwaway one takes them.
                with contextlib.suppress(Exception):
                    self._con.query("SELECT 1", "CSV")
                raise

    def command(self, sql: str) -> None:
        with _CHDB_LOCK, _failing():
            self._use()
            self._con.query(sql, "CSV")

    def insert_arrow(self, table: str, data: pa.Table) -> None:
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, data.schema) as writer:
            writer.write_table(data)
        columns = ", ".join(f"`{name}`" for name in data.column_names)
        with _CHDB_LOCK, _failing(f"insert into {table} failed: "):
            self._use()
            with self._con.send_insert(f"INSERT INTO {table} ({columns})", "ArrowStream") as inserter:
                inserter.append(sink.getvalue())
                inserter.finish()


class _ServerEngine(_Engine):
    """A ClickHouse server over HTTP (``clickhouse-connect``)."""

    def __init__(self, url: StoreURL) -> None:
        try:
            import clickhouse_connect
        except ImportError:
            raise ClickHouseError(
                "clickhouse:// stores need clickhouse-connect: pip install 'loopsight[clickhouse]'"
            ) from None
        with _failing(f"cannot reach ClickHouse at {url.redacted()}: "):
            self._client = clickhouse_connect.get_client(
                host=url.host,
                port=url.port,
                username=url.user,
                password=url.password,
                database=url.database,
                secure=url.secure,
                autogenerate_session_id=False,
            )

    def query_arrow(self, sql: str, params: dict[str, Any]) -> pa.Table:
        with _failing():
            return self._client.query_arrow(sql, parameters=_bound(params) or None)

    def command(self, sql: str) -> None:
        with _failing():
            self._client.command(sql)

    def insert_arrow(self, table: str, data: pa.Table) -> None:
        with _failing(f"insert into {table} failed: "):
            self._client.insert_arrow(table, data)


class ClickHouseConnection:
    """A connection to a ClickHouse store, and its :class:`~loopsight.stores.protocol.Reader`:
    :meth:`rows` takes DuckDB-dialect SQL (the questions are written once) and runs its
    translation; :meth:`execute` runs ClickHouse SQL as it is.

    Example:
        >>> con = connect_chdb("/tmp/loopsight-doc-ch")  # doctest: +SKIP
        >>> con.execute("SELECT 1 AS one").arrow().column_names  # doctest: +SKIP
        ['one']
    """

    dialect = "clickhouse"

    def __init__(self, engine: _Engine, url: StoreURL) -> None:
        self._engine = engine
        self.url = url
        self.closed = False

    def execute(self, sql: str, params: dict[str, Any] | Sequence[Any] | None = None) -> Result:
        """Run one statement with ``{name:Type}`` parameters and return its result."""
        if self.closed:
            raise ClickHouseError("connection is closed")
        if params is not None and not isinstance(params, dict):
            raise ClickHouseError("ClickHouse statements take named parameters ({name:Type}), not positional ones")
        return Result(self._engine.query_arrow(sql, used_params(sql, params)))

    def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run DuckDB-dialect ``sql`` (translated once, then cached) with named parameters; JSON-ready rows."""
        from loopsight.stores.sqlfiles import jsonable
        from loopsight.stores.translate import parameters, translate

        if self._engine.materialized_ctes is None:
            found = self._engine.query_arrow(
                "SELECT count() AS n FROM system.settings WHERE name = 'enable_materialized_cte'", {}
            )
            self._engine.materialized_ctes = bool(found.column("n")[0].as_py())
        text, arrays = translate(sql, self._engine.materialized_ctes)
        result = self.execute(text, parameters(params or {}, arrays))
        names = result.table.column_names
        return [{n: jsonable(v) for n, v in zip(names, row, strict=True)} for row in result.fetchall()]

    def command(self, sql: str) -> None:
        """Run a statement that returns nothing (DDL)."""
        self._engine.command(sql)

    def insert_arrow(self, table: str, data: pa.Table) -> None:
        """Columnar insert of an Arrow table whose column names match ``table``'s."""
        if data.num_rows:
            self._engine.insert_arrow(table, data)

    def cursor(self) -> ClickHouseConnection:
        """Another handle on the same engine (chdb serializes statements; the server runs them in parallel)."""
        return ClickHouseConnection(self._engine, self.url)

    def close(self) -> None:
        """Forget this handle (the embedded engine stays up for the rest of the process)."""
        self.closed = True

    def __enter__(self) -> ClickHouseConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def chdb_open_path() -> str | None:
    """The data directory chdb has open in this process, if any (it holds one per process)."""
    with _CHDB_LOCK:
        return next(iter(_CHDB), None)


def connect_chdb(path: str, table: str = "otel_traces", database: str = "default") -> ClickHouseConnection:
    """The embedded engine on data directory ``path`` (created if missing), in ``database``."""
    return ClickHouseConnection(
        _ChdbEngine(path, database), StoreURL("chdb", path=path, table=table, database=database)
    )


def connect(url: StoreURL) -> ClickHouseConnection:
    """A connection for a parsed ``clickhouse://`` or ``chdb://`` URL."""
    if url.scheme == "chdb":
        return connect_chdb(url.path, url.table, url.database)
    if url.scheme == "clickhouse":
        return ClickHouseConnection(_ServerEngine(url), url)
    raise ClickHouseError(f"not a ClickHouse store URL: {url.redacted()}")
