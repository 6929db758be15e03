"""every stored trace queued for derivation (the backfill of the derived tables)

Revision ID: 0007
Revises: 0006

The derived tables are filled by the store's deriver, never by a migration: a migration that
adds or changes a derived table queues every stored trace in ``derive_pending``, and the store
derives them when it opens (``loopsight db upgrade`` opens it too). So the derivation lives in one
place (``loopsight.stores.derive``) and migrations import nothing above the schema.
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute('INSERT INTO derive_pending SELECT "TraceId", min("Timestamp") FROM spans GROUP BY "TraceId"')


def downgrade() -> None:
    op.execute("DELETE FROM derive_pending")
