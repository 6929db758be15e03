"""SQL kept as files, one statement per question or rule, composed by naming CTEs.

A file's first line ``-- ctes: runs=run_spans, loop_rows=loops_derived`` makes ``runs`` the CTE
holding ``run_spans.sql`` of the same folder (itself loaded so), ahead of the file's own ``WITH``
list. ``{{run_ok}}``, ``{{run}}`` and ``{{step}}`` are replaced by the rules of
:mod:`loopsight.vocabulary`, so each rule is written once. Parameters are DuckDB ``$name``
placeholders, never string formatting.

Example:
    >>> DERIVE.load("run_spans").startswith("-- The runs in scope")
    True
    >>> with_ctes("WITH b AS (SELECT 2) SELECT * FROM a, b", {"a": "SELECT 1"})
    'WITH a AS (\\nSELECT 1\\n)\\n, b AS (SELECT 2) SELECT * FROM a, b'
"""

from __future__ import annotations

import re
from datetime import date, datetime
from functools import cache
from importlib import resources
from typing import Any

from loopsight.vocabulary import RULES

_RULE = re.compile(r"\{\{(\w+)\}\}")


def _rules(text: str) -> str:
    return _RULE.sub(lambda m: RULES[m.group(1)].sql, text)


class SqlFiles:
    """The ``.sql`` files of one package folder."""

    def __init__(self, package: str, folder: str = "sql") -> None:
        self.package = package
        self.folder = folder

    def load(self, name: str) -> str:
        """The text of ``<folder>/<name>.sql``, preceded by the CTEs its first line names."""
        return self._load(name, ())

    def _text(self, name: str) -> str:
        return _rules(resources.files(self.package).joinpath(self.folder, f"{name}.sql").read_text(encoding="utf-8"))

    def _header(self, name: str) -> dict[str, str]:
        """The CTEs a file's first line names (``-- ctes: runs=run_spans``), CTE: file."""
        first = self._text(name).split("\n", 1)[0]
        if not first.startswith("-- ctes:"):
            return {}
        folder = name.rpartition("/")[0]
        pairs = (item.strip().split("=") for item in first[len("-- ctes:") :].split(","))
        return {cte: f"{folder}/{file}" if folder else file for cte, file in pairs}

    @cache  # noqa: B019 - a handful of module-level instances, each file read once
    def _load(self, name: str, instead: tuple[tuple[str, str], ...]) -> str:
        ctes = {**self._header(name), **dict(instead)}
        text = self._text(name)
        return with_ctes(text, {cte: self.load(file) for cte, file in ctes.items()}) if ctes else text

    def compose(self, name: str, *, inline: bool = False, **ctes: str) -> str:
        """``name``'s SQL preceded by the named CTEs, each another file of this folder; a CTE the
        file's first line names is taken from the file given here instead.

        Example:
            >>> DERIVE.compose("burn_growth", burn_steps="derive_steps").startswith("WITH burn_steps AS (")
            True
            >>> "derive_sessions" in DERIVE.compose("loops_core", runs="loop_session_runs")
            True
        """
        header = self._header(name)
        named = self._load(name, tuple(sorted((c, f) for c, f in ctes.items() if c in header)))
        extra = {cte: self.load(file) for cte, file in ctes.items() if cte not in header}
        return with_ctes(named, extra, inline=inline)


def with_ctes(body: str, ctes: dict[str, str], *, inline: bool = False) -> str:
    """``body`` preceded by the named CTEs ``ctes`` (name: SQL text).

    A body that has its own ``WITH`` (or ``WITH RECURSIVE``) clause continues the list. With ``inline``
    the CTEs are ``NOT MATERIALIZED`` (DuckDB): each use reads only the columns and rows it needs.

    Example:
        >>> with_ctes("WITH RECURSIVE b(n) AS (SELECT 1) SELECT * FROM a, b", {"a": "SELECT 1"})
        'WITH RECURSIVE a AS (\\nSELECT 1\\n)\\n, b(n) AS (SELECT 1) SELECT * FROM a, b'
    """
    if not ctes:
        return body
    how = "AS NOT MATERIALIZED" if inline else "AS"
    head = ",\n".join(f"{name} {how} (\n{sql}\n)" for name, sql in ctes.items())
    lines = body.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("--")), 0)
    if lines and lines[first].lstrip().upper().startswith("WITH "):
        rest = lines[first].lstrip()[4:].lstrip()
        recursive = rest.upper().startswith("RECURSIVE ")
        lines[first] = ", " + rest[len("RECURSIVE ") :] if recursive else "," + lines[first].lstrip()[4:]
        return f"WITH {'RECURSIVE ' if recursive else ''}{head}\n" + "\n".join(lines)
    return f"WITH {head}\n{body}"


def jsonable(value: Any) -> Any:
    """A query value made JSON-ready: datetimes as ISO-8601 UTC (``Z``), NaN as None.

    Example:
        >>> jsonable({"at": datetime(2026, 1, 2, 3, 4, 5), "x": float("nan")})
        {'at': '2026-01-02T03:04:05.000000Z', 'x': None}
    """
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


DERIVE = SqlFiles("loopsight.stores")
"""The derivation's SQL (``stores/sql``): what a run, its steps, loops and stall facts are."""
