"""Store backends behind one interface: embedded DuckDB (default) or ClickHouse.

``--store URL`` picks one (see :mod:`loopsight.stores.url`):

- ``duckdb:///path/file.duckdb`` (or a bare path): the collector's DuckDB file.
- ``clickhouse://user:pass@host:8123/db``: a ClickHouse server, usually filled by the
  OpenTelemetry Collector's ``clickhouseexporter`` (``otel_traces``).
- ``chdb:///path/to/dir``: the same ClickHouse engine embedded in this process.

:func:`open_reader` returns a connection the analytics accept (DuckDB connection or
:class:`~loopsight.stores.clickhouse.ClickHouseConnection`); :func:`open_writer` returns
an object with the collector store's ``submit(arrow) -> Future``, ``reader()``,
``queue_depth``, ``stats`` and ``close()``.

Example:
    >>> from loopsight.stores import open_reader
    >>> from loopsight.analytics.runs import list_runs
    >>> con = open_reader("chdb:///var/lib/loopsight/ch")  # doctest: +SKIP
    >>> list_runs(con, limit=5)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import duckdb

from loopsight.stores.clickhouse import ClickHouseError
from loopsight.stores.url import StoreURL, StoreURLError, parse_store_url

__all__ = ["STORE_ERRORS", "StoreURL", "StoreURLError", "dialect", "open_reader", "open_writer", "parse_store_url"]

STORE_ERRORS: tuple[type[Exception], ...] = (duckdb.Error, ClickHouseError)
"""What a statement on either store raises when it fails (``except STORE_ERRORS``)."""


def _parsed(url: str | StoreURL) -> StoreURL:
    return url if isinstance(url, StoreURL) else parse_store_url(url)


def open_reader(url: str | StoreURL, *, migrate: bool = True) -> Any:
    """A read connection for ``url``.

    DuckDB: a read-only connection (fails with a clear ``StoreError`` while a collector holds
    the file). ClickHouse: a connection whose views are brought up to date first when
    ``migrate`` (the exporter may have created ``otel_traces`` alone).

    Example:
        >>> open_reader("ftp://x")
        Traceback (most recent call last):
        ...
        loopsight.stores.url.StoreURLError: unknown store scheme 'ftp' in 'ftp://x': use duckdb:///path, clickhouse://user:pass@host:8123/db or chdb:///dir
    """
    parsed = _parsed(url)
    if parsed.scheme == "duckdb":
        import duckdb

        from loopsight.collector.store import StoreError, _explain_io_error

        try:
            return duckdb.connect(parsed.path, read_only=True)
        except (duckdb.IOException, duckdb.CatalogException) as exc:
            raise StoreError(_explain_io_error(parsed.path, exc)) from None
    from loopsight.collector.store import StoreError
    from loopsight.stores.clickhouse import ClickHouseError, connect
    from loopsight.stores.clickhouse_schema import upgrade

    try:
        con = connect(parsed)
        if migrate:
            upgrade(con)
    except ClickHouseError as exc:
        raise StoreError(str(exc)) from None
    return con


def open_writer(url: str | StoreURL, **kwargs: Any) -> Any:
    """The collector's writer for ``url``: ``Store`` (DuckDB) or ``ClickHouseWriter``.

    Example:
        >>> writer = open_writer("chdb:///tmp/loopsight-doc-ch")  # doctest: +SKIP
        >>> writer.submit(table).result()  # doctest: +SKIP
    """
    parsed = _parsed(url)
    if parsed.scheme == "duckdb":
        from loopsight.collector.store import Store

        return Store.open(parsed.path, **kwargs)
    from loopsight.stores.clickhouse_writer import ClickHouseWriter

    return ClickHouseWriter.open(parsed, **kwargs)


def dialect(con: Any) -> str:
    """``"clickhouse"`` for a ClickHouse connection, else ``"duckdb"``."""
    return getattr(con, "sql_dialect", "duckdb")
