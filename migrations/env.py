"""Alembic environment: always online, on the connection ``runner.upgrade`` hands over."""

from alembic import context

import loopsight.migrations.runner  # noqa: F401  (runner._config registered the duckdb impl before this runs)

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=None)
with context.begin_transaction():
    context.run_migrations()
