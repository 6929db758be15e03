"""Run Alembic programmatically against a DuckDB file (no alembic.ini needed)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.ddl.impl import DefaultImpl
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
import sqlalchemy as sa

HERE = Path(__file__).resolve().parent


class AlembicDuckDBImpl(DefaultImpl):
    """Teaches Alembic the ``duckdb`` dialect name (duckdb-engine ships none)."""

    __dialect__ = "duckdb"
    transactional_ddl = True


def _config(db_path: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(HERE))
    cfg.set_main_option("sqlalchemy.url", f"duckdb:///{db_path}")
    return cfg


def _engine(db_path: str) -> sa.Engine:
    return sa.create_engine(f"duckdb:///{db_path}", poolclass=sa.pool.NullPool)


def upgrade(db_path: str, revision: str = "head") -> str | None:
    """Bring the database at ``db_path`` to ``revision``; returns the revision it is at.

    Example:
        >>> upgrade("/tmp/x.duckdb")  # doctest: +SKIP
        '0001'
    """
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
    engine = _engine(db_path)
    try:
        return _current(engine)
    finally:
        engine.dispose()


def head() -> str | None:
    """The newest revision this code knows."""
    return ScriptDirectory.from_config(_config(":memory:")).get_current_head()


def _current(engine: sa.Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
