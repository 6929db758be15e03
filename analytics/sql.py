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
from typing import Any

import duckdb


@cache
def load(name: str) -> str:
    """The text of ``sql/<name>.sql``."""
    return resources.files("loopsight.analytics").joinpath("sql", f"{name}.sql").read_text(encoding="utf-8")


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


def rows(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Execute ``sql`` and return the result as a list of JSON-ready dicts."""
    cursor = con.execute(sql, params or {})
    names = [d[0] for d in cursor.description]
    return [{n: jsonable(v) for n, v in zip(names, row)} for row in cursor.fetchall()]


def query(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> list[dict[str, Any]]:
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
    """``sql/<dialect>/<name>.sql``, preceded by the CTEs its first line names.

    A first line ``-- ctes: loop_rows=loops_core`` makes ``loop_rows`` the CTE holding
    ``sql/<dialect>/loops_core.sql`` (as :func:`loopsight.analytics.loops.compose` does).
    """
    text = load(f"{dialect}/{name}")
    first = text.split("\n", 1)[0]
    if not first.startswith("-- ctes:"):
        return text
    from loopsight.analytics.loops import compose

    ctes = dict(item.strip().split("=") for item in first[len("-- ctes:"):].split(","))
    return compose(f"{dialect}/{name}", **{cte: f"{dialect}/{file}" for cte, file in ctes.items()})


def run(con: Any, name: str, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Run question ``name``: the DuckDB text ``sql``, or on ClickHouse ``sql/clickhouse/<name>.sql``.

    For the questions whose DuckDB SQL is composed in Python (loops, burn).

    Example:
        >>> run(duckdb.connect(), "one", "SELECT $x AS x", {"x": 1})
        [{'x': 1}]
    """
    return rows(con, dialect_sql(con, name, sql), params)
