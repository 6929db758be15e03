"""Stores behind one interface: the embedded DuckDB file (default) or ClickHouse.

``--store URL`` picks one (see :mod:`loopsight.stores.url`):

- ``duckdb:///path/file.duckdb`` (or a bare path): the collector's DuckDB file.
- ``clickhouse://user:pass@host:8123/db``: a ClickHouse server, usually filled by the
  OpenTelemetry Collector's ``clickhouseexporter`` (``otel_traces``).
- ``chdb:///path/to/dir``: the same ClickHouse engine embedded in this process.

:func:`open_writer` returns a :class:`Writer` (the collector's store: ``submit(arrow) ->
Future``, ``reader()``, ``close()``), :func:`open_reader` a :class:`Reader` (DuckDB-dialect
SQL in, JSON-ready rows out) — the only two things the layers above use.

Example:
    >>> from loopsight.stores import open_reader
    >>> from loopsight.analytics import list_runs
    >>> reader = open_reader("chdb:///var/lib/loopsight/ch")  # doctest: +SKIP
    >>> list_runs(reader, limit=5)  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from loopsight.stores.clickhouse import ClickHouseError
from loopsight.stores.files import check_unlocked
from loopsight.stores.protocol import QueueFull, Reader, StoreError, Writer, WriterStats
from loopsight.stores.url import StoreURL, StoreURLError, parse_store_url

__all__ = [
    "STORE_ERRORS",
    "QueueFull",
    "Reader",
    "StoreError",
    "StoreURL",
    "StoreURLError",
    "Writer",
    "WriterStats",
    "check_chdb_store",
    "dialect",
    "ingest_request",
    "open_reader",
    "open_writer",
    "parse_store_url",
]

STORE_ERRORS: tuple[type[Exception], ...] = (duckdb.Error, ClickHouseError)
"""What a statement on either store raises when it fails (``except STORE_ERRORS``)."""


def _parsed(url: str | StoreURL) -> StoreURL:
    return url if isinstance(url, StoreURL) else parse_store_url(url)


def open_reader(url: str | StoreURL, *, migrate: bool = True) -> Any:
    """A read connection for ``url``.

    DuckDB: a read-only connection (fails with a clear ``StoreError`` while a collector holds
    the file). ClickHouse: a connection whose schema is brought up to date first when
    ``migrate`` (the exporter may have created ``otel_traces`` alone).

    Example:
        >>> open_reader("ftp://x")
        Traceback (most recent call last):
        ...
        loopsight.stores.url.StoreURLError: unknown store scheme 'ftp' in 'ftp://x': use duckdb:///path, clickhouse://user:pass@host:8123/db or chdb:///dir
    """
    parsed = _parsed(url)
    if parsed.scheme == "duckdb":
        from loopsight.stores.duckdb_store import DuckDBReader
        from loopsight.stores.files import explain_io_error

        try:
            return DuckDBReader(duckdb.connect(parsed.path, read_only=True))
        except (duckdb.IOException, duckdb.CatalogException) as exc:
            raise StoreError(explain_io_error(parsed.path, exc)) from None
    from loopsight.stores.clickhouse import connect
    from loopsight.stores.clickhouse_schema import upgrade

    if parsed.scheme == "chdb":
        check_chdb_store(parsed)
    try:
        con = connect(parsed)
        if migrate:
            upgrade(con)
    except ClickHouseError as exc:
        raise StoreError(str(exc)) from None
    return con


def check_chdb_store(url: str | StoreURL, *, unlocked: bool = False) -> None:
    """Raise :class:`StoreError` unless ``url``'s folder holds a chdb store with its database
    (and, with ``unlocked``, no other process has it open: ask only from a process that has not
    opened it), without starting the engine (it takes its folder for the process that opens it first).

    A reader never makes a store (a typo would), nor a database in one: chdb keeps one folder of
    metadata per database.

    Example:
        >>> check_chdb_store("chdb:///nonexistent/loopsight")
        Traceback (most recent call last):
        ...
        loopsight.stores.protocol.StoreError: no chdb store at /nonexistent/loopsight: it does not exist (the collector makes it: loopsight collector --store chdb://PATH)
    """
    parsed = _parsed(url)
    if Path(parsed.path, "metadata", parsed.database).is_dir():
        if unlocked:
            check_unlocked(parsed.path)
        return
    where = Path(parsed.path)
    why = (
        "it does not exist"
        if not where.exists()
        else ("it is not a directory" if not where.is_dir() else f"it holds no database {parsed.database!r}")
    )
    raise StoreError(
        f"no chdb store at {parsed.path}: {why} (the collector makes it: loopsight collector --store chdb://PATH)"
    )


def open_writer(url: str | StoreURL, **kwargs: Any) -> Any:
    """The collector's writer for ``url``: the DuckDB ``Store`` or the ClickHouse writer.

    Example:
        >>> writer = open_writer("chdb:///tmp/loopsight-doc-ch")  # doctest: +SKIP
        >>> writer.submit(table).result()  # doctest: +SKIP
    """
    parsed = _parsed(url)
    if parsed.scheme == "duckdb":
        from loopsight.stores.duckdb_store import Store

        return Store.open(parsed.path, **kwargs)
    from loopsight.stores.clickhouse_store import ClickHouseStore

    # chdb would answer a file in the folder's place with a native stack trace
    if parsed.scheme == "chdb" and Path(parsed.path).exists() and not Path(parsed.path).is_dir():
        raise StoreError(f"cannot make a chdb store at {parsed.path}: it is not a directory")
    return ClickHouseStore.open(parsed, **kwargs)


def ingest_request(writer: Any, request: Any, limits: Any = None, timeout: float = 60.0) -> int:
    """Normalize an OTLP request, queue it and wait for the commit; the spans accepted.

    Raises ``QueueFull`` if the writer is saturated and ``StoreError`` if the commit fails.

    Example:
        >>> ingest_request(store, spans_to_request(spans))  # doctest: +SKIP
        3
    """
    from loopsight.ingest import prepare

    prepared = prepare(request, limits)
    if prepared.table is None:
        return 0
    return int(writer.submit(prepared.table).result(timeout=timeout))


def dialect(reader: Reader) -> str:
    """The engine behind a reader: ``"duckdb"`` or ``"clickhouse"``."""
    return reader.dialect
