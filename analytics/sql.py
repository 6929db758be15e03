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
    dialect = getattr(con, "sql_dialect", "duckdb")
    return rows(con, load(name if dialect == "duckdb" else f"{dialect}/{name}"), params)
