"""Run the named SQL files in ``analytics/sql/`` with named parameters.

Each question is one ``.sql`` file; parameters are DuckDB ``$name`` placeholders, never
string formatting. Results come back as JSON-ready dicts (ISO-8601 UTC times).

Example:
    >>> import duckdb
    >>> rows(duckdb.connect(), "SELECT 1 AS x")
    [{'x': 1}]
"""

from __future__ import annotations

from datetime import date, datetime
from functools import cache
from importlib import resources
from typing import Any, Protocol


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


@cache
def load(name: str) -> str:
    """The text of ``sql/<name>.sql``, preceded by the CTEs its first line names.

    A first line ``-- ctes: runs=run_spans, loop_rows=loops_derived`` makes ``runs`` the CTE
    holding ``run_spans.sql`` of the same folder (itself loaded so), and so on, ahead of the
    file's own ``WITH`` list (:func:`with_ctes`).

    Example:
        >>> load("clickhouse/top_runs").startswith("WITH runs AS (")
        True
    """
    text = resources.files("loopsight.analytics").joinpath("sql", f"{name}.sql").read_text(encoding="utf-8")
    first = text.split("\n", 1)[0]
    if not first.startswith("-- ctes:"):
        return text
    folder = name.rpartition("/")[0]
    pairs = (item.strip().split("=") for item in first[len("-- ctes:") :].split(","))
    return with_ctes(text, {cte: load(f"{folder}/{file}" if folder else file) for cte, file in pairs})


def with_ctes(body: str, ctes: dict[str, str], *, inline: bool = False) -> str:
    """``body`` preceded by the named CTEs ``ctes`` (name: SQL text).

    A body that has its own ``WITH`` clause continues the list. With ``inline`` the CTEs are
    ``NOT MATERIALIZED`` (DuckDB): each use reads only the columns and rows it needs.

    Example:
        >>> with_ctes("WITH b AS (SELECT 2) SELECT * FROM a, b", {"a": "SELECT 1"})
        'WITH a AS (\\nSELECT 1\\n)\\n, b AS (SELECT 2) SELECT * FROM a, b'
    """
    how = "AS NOT MATERIALIZED" if inline else "AS"
    head = ",\n".join(f"{name} {how} (\n{sql}\n)" for name, sql in ctes.items())
    lines = body.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("--")), 0)
    if lines and lines[first].lstrip().upper().startswith("WITH "):
        lines[first] = "," + lines[first].lstrip()[4:]
        return f"WITH {head}\n" + "\n".join(lines)
    return f"WITH {head}\n{body}"


def jsonable(value: Any) -> Any:
    """A query value made JSON-ready: datetimes as ISO-8601 UTC (``Z``), NaN as None."""
    if isinstance(value, datetime):
        return value.isoformat(timespec="microseconds") + "Z" if value.tzinfo is None else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    return value


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
