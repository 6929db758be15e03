"""Run the named SQL files in ``analytics/sql/`` with named parameters.

Each question is one ``.sql`` file; parameters are DuckDB ``$name`` placeholders, never
string formatting. Results come back as JSON-ready dicts (ISO-8601 UTC times).

Example:
    >>> import duckdb
    >>> rows(duckdb.connect(), "SELECT 1 AS x")
    [{'x': 1}]
"""

from __future__ import annotations

from typing import Any, Protocol

from loopsight.stores.sqlfiles import SqlFiles, jsonable, with_ctes

__all__ = ["QUESTIONS", "Connection", "jsonable", "load", "query", "rows", "run", "with_ctes"]


class Result(Protocol):
    """What a statement returns on either engine: DB-API ``description`` and ``fetchall()``."""

    @property
    def description(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """A read connection of either engine: ``duckdb.DuckDBPyConnection`` or
    :class:`loopsight.stores.clickhouse.ClickHouseConnection` (whose ``sql_dialect`` is ``"clickhouse"``)."""

    def execute(self, query: str, parameters: Any = ..., /) -> Any: ...

    def cursor(self) -> Any: ...

    def close(self) -> None: ...


QUESTIONS = SqlFiles("loopsight.analytics")
"""The read questions (``analytics/sql``), in DuckDB's dialect."""


def load(name: str) -> str:
    """The text of ``sql/<name>.sql`` with the CTEs its first line names (see :class:`SqlFiles`).

    Example:
        >>> load("clickhouse/top_runs").startswith("WITH runs AS (")
        True
    """
    return QUESTIONS.load(name)


def rows(con: Connection, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Execute ``sql`` and return the result as a list of JSON-ready dicts."""
    cursor = con.execute(sql, params or {})
    names = [d[0] for d in cursor.description]
    return [{n: jsonable(v) for n, v in zip(names, row, strict=False)} for row in cursor.fetchall()]


def query(con: Connection, name: str, **params: Any) -> list[dict[str, Any]]:
    """Run the named question with its parameters.

    Example:
        >>> query(con, "runs", limit=50, offset=0, agent=None, ...)  # doctest: +SKIP

    A ClickHouse connection (``sql_dialect = "clickhouse"``, see ``loopsight.stores``) runs
    the ``sql/clickhouse/<name>.sql`` variant with the same parameters.
    """
    return rows(con, dialect_sql(con, name), params)


def dialect_sql(con: Any, name: str, sql: str | None = None) -> str:
    """The SQL to run for question ``name`` on ``con``: ``sql`` (or ``sql/<name>.sql``) on
    DuckDB, ``sql/clickhouse/<name>.sql`` on ClickHouse, whose run index is refreshed first.

    Example:
        >>> dialect_sql(duckdb.connect(), "x", "SELECT 1")
        'SELECT 1'
    """
    dialect = getattr(con, "sql_dialect", "duckdb")
    if dialect == "duckdb":
        return sql if sql is not None else load(name)
    from loopsight.stores.clickhouse_run_index import refresh

    refresh(con)
    return dialect_file(dialect, name)


def dialect_file(dialect: str, name: str) -> str:
    """``sql/<dialect>/<name>.sql`` with the CTEs its first line names (see :func:`load`).

    Example:
        >>> dialect_file("clickhouse", "loops").startswith("WITH loop_rows AS (")
        True
    """
    return load(f"{dialect}/{name}")


def run(con: Any, name: str, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Run question ``name``: the DuckDB text ``sql``, or on ClickHouse ``sql/clickhouse/<name>.sql``.

    For the questions whose DuckDB SQL is composed in Python (loops, burn).

    Example:
        >>> run(duckdb.connect(), "one", "SELECT $x AS x", {"x": 1})
        [{'x': 1}]
    """
    return rows(con, dialect_sql(con, name, sql), params)
