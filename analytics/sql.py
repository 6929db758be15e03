"""Run the named SQL files in ``analytics/sql/`` with named parameters.

Each question is one ``.sql`` file; parameters are DuckDB ``$name`` placeholders, never
string formatting. Results come back as JSON-ready dicts (ISO-8601 UTC times).

Example:
    >>> import duckdb
    >>> rows(DuckDBReader(duckdb.connect()), "SELECT 1 AS x")
    [{'x': 1}]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopsight.stores.duckdb_store import DuckDBReader
from loopsight.stores.protocol import Reader
from loopsight.stores.sqlfiles import SqlFiles, jsonable, with_ctes

__all__ = ["QUESTIONS", "Connection", "DuckDBReader", "Reader", "jsonable", "load", "query", "rows", "run", "with_ctes"]


Connection = Reader
"""What every question takes: a store's reader (DuckDB or ClickHouse), see :mod:`loopsight.stores`."""


QUESTIONS = SqlFiles("loopsight.analytics")
"""The read questions (``analytics/sql``), in DuckDB's dialect."""


def load(name: str) -> str:
    """The text of ``sql/<name>.sql`` with the CTEs its first line names (see :class:`SqlFiles`).

    Example:
        >>> load("loops").startswith("-- /api/v1/loops")
        True
    """
    return QUESTIONS.load(name)


def rows(con: Reader, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Run DuckDB-dialect ``sql`` on ``con`` (translated for ClickHouse) and return JSON-ready dicts."""
    return con.rows(sql, params or {})


def query(con: Reader, name: str, **params: Any) -> list[dict[str, Any]]:
    """Run the named question with its parameters.

    Example:
        >>> query(con, "runs", limit=50, offset=0, agent=None, ...)  # doctest: +SKIP
    """
    return con.rows(load(name), params)


def run(con: Reader, name: str, sql: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Run question ``name`` given as composed SQL text (for the questions composed in Python: loops, burn).

    Example:
        >>> import duckdb
        >>> from loopsight.stores.duckdb_store import DuckDBReader
        >>> run(DuckDBReader(duckdb.connect()), "one", "SELECT $x AS x", {"x": 1})
        [{'x': 1}]
    """
    return con.rows(sql, params)
