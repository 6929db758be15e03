"""derived table run_step_totals (per run and step: what the run had spent by the step's end)

Revision ID: 0010
Revises: 0009

The budget advisor (docs/budgets.md) replays every stored run step by step against candidate
budgets: it needs, per step, the tool calls and tokens of the step and of the run so far and
when the step began and ended (the rows of ``stores/sql/step_totals.sql``). Every stored trace
is queued, so the store fills the table when it opens (``loopsight db upgrade`` opens it too).
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE run_step_totals (
            trace_id VARCHAR NOT NULL,
            run_id VARCHAR NOT NULL,
            agent VARCHAR,
            service VARCHAR,
            started_at TIMESTAMP NOT NULL,
            step BIGINT NOT NULL,
            ordinal BIGINT NOT NULL,
            tool_calls BIGINT NOT NULL,
            tokens BIGINT NOT NULL,
            cum_tool_calls BIGINT NOT NULL,
            cum_tokens BIGINT NOT NULL,
            start_ms DOUBLE NOT NULL,
            end_ms DOUBLE NOT NULL
        )
        """
    )
    op.execute('INSERT INTO derive_pending SELECT "TraceId", min("Timestamp") FROM spans GROUP BY "TraceId"')


def downgrade() -> None:
    op.execute("DROP TABLE run_step_totals")
