"""Run Alembic programmatically against a DuckDB file (no alembic.ini needed).

Alembic and SQLAlchemy take over a second to import, so :func:`upgrade` first reads the
database's revision with DuckDB alone and only loads Alembic when there is work to do.
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from loopsight.errors import LoopsightError

if TYPE_CHECKING:
    import sqlalchemy as sa
    from alembic.config import Config

HERE = Path(__file__).resolve().parent
_REVISION = re.compile(r"""^(down_revision|revision)\s*=\s*(?:["']([^"']*)["']|None)""", re.M)


class ForeignDatabase(LoopsightError, ValueError):
    """The file holds tables but no loopsight schema: another program's database, left as it is."""


def _register_impl() -> None:
    from alembic.ddl.impl import DefaultImpl

    class AlembicDuckDBImpl(DefaultImpl):
        """Teaches Alembic the ``duckdb`` dialect name (duckdb-engine ships none)."""

        __dialect__ = "duckdb"
        transactional_ddl = True

    globals()["AlembicDuckDBImpl"] = AlembicDuckDBImpl


def _config(db_path: str) -> Config:
    from alembic.config import Config

    if "AlembicDuckDBImpl" not in globals():
        _register_impl()
    cfg = Config()
    cfg.set_main_option("script_location", str(HERE))
    cfg.set_main_option("sqlalchemy.url", f"duckdb:///{db_path}")
    return cfg


def _engine(db_path: str) -> sa.Engine:
    import sqlalchemy as sa

    return sa.create_engine(f"duckdb:///{db_path}", poolclass=sa.pool.NullPool)


@cache
def _head_from_files() -> str | None:
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (HERE / "versions").glob("[0-9]*.py"):
        found = dict((name, value) for name, value in _REVISION.findall(path.read_text(encoding="utf-8")))
        if found.get("revision"):
            revisions.add(found["revision"])
        if found.get("down_revision"):
            parents.add(found["down_revision"])
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def _quick_current(db_path: str) -> str | None:
    """The revision recorded in the file, read with DuckDB alone (``None`` if none)."""
    if db_path == ":memory:" or not os.path.exists(db_path):
        return None
    con = duckdb.connect(db_path)
    try:
        found = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'alembic_version'"
        ).fetchone()
        if not found or not found[0]:
            others = [
                row[0] for row in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1 LIMIT 4").fetchall()
            ]
            if others:
                shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
                raise ForeignDatabase(
                    f"{db_path} holds another program's tables ({shown}) and no loopsight schema: "
                    "loopsight keeps its spans in a file of its own, give it another --db"
                )
            return None
        row = con.execute("SELECT version_num FROM alembic_version").fetchone()
        return row[0] if row else None
    finally:
        con.close()


def upgrade(db_path: str, revision: str = "head") -> str | None:
    """Bring the database at ``db_path`` to ``revision``; returns the revision it is at. Raises
    :class:`ForeignDatabase` for a file holding tables but no loopsight schema (never added to).

    Example:
        >>> upgrade("/tmp/x.duckdb")  # doctest: +SKIP
        '0003'
    """
    if revision == "head":
        head_revision = _head_from_files()
        if head_revision is not None and _quick_current(db_path) == head_revision:
            return head_revision
    from alembic import command

    cfg = _config(db_path)
    engine = _engine(db_path)
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
        return _current(engine)
    finally:
        engine.dispose()


def current(db_path: str) -> str | None:
    """The revision the database is at, ``None`` for an empty database."""
    return _quick_current(db_path)


def head() -> str | None:
    """The newest revision this code knows (read from the revision files; Alembic only if they branch)."""
    if _head_from_files() is not None:
        return _head_from_files()
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config(":memory:")).get_current_head()


def _current(engine: Any) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
