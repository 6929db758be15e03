"""Schema migrations (Alembic on SQLAlchemy + duckdb-engine).

Applied at collector start-up and by ``loopsight db upgrade``. Each revision is a small
ordered function in ``versions/`` and keeps existing data.
"""

from loopsight.migrations.runner import ForeignDatabase, current, upgrade

__all__ = ["ForeignDatabase", "current", "upgrade"]
