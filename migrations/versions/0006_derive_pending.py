"""derive_pending: traces whose derived tables the writer has still to recompute

Revision ID: 0006
Revises: 0005

The writer used to recompute the derived per-run tables inside every commit, and the
acknowledgement waited for it (~180 ms a commit, most of its time). Now a commit only records
the traces it touched here, with the earliest span start it may have changed
(``since``); the writer recomputes all pending traces in one pass ``derive_interval`` after
the first pending commit, or when a reader asks for current tables, and deletes
the rows in the same transaction. Rows left by a crash between the two transactions are
derived when the store opens again.
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE TABLE derive_pending (trace_id VARCHAR NOT NULL, since TIMESTAMP NOT NULL)")


def downgrade() -> None:
    op.execute("DROP TABLE derive_pending")
