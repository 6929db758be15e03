"""alerts: rule state, transition history and evaluated samples

Revision ID: 0002
Revises: 0001
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # One row per rule name: the evaluator's memory across restarts (pending since, last
    # notification for the cooldown). Definitions are stored with secrets redacted.
    op.execute(
        """
        CREATE TABLE alert_rules (
            name VARCHAR PRIMARY KEY,
            definition VARCHAR NOT NULL,
            active BOOLEAN NOT NULL DEFAULT true,
            state VARCHAR NOT NULL DEFAULT 'ok',
            state_since TIMESTAMP,
            pending_since TIMESTAMP,
            value DOUBLE,
            baseline DOUBLE,
            samples BIGINT,
            examples VARCHAR[],
            last_evaluated_at TIMESTAMP,
            last_notified_at TIMESTAMP,
            notified_firing BOOLEAN NOT NULL DEFAULT false
        )
        """
    )
    op.execute("CREATE SEQUENCE alert_event_id START 1")
    op.execute(
        """
        CREATE TABLE alert_events (
            id BIGINT PRIMARY KEY DEFAULT nextval('alert_event_id'),
            rule VARCHAR NOT NULL,
            occurred_at TIMESTAMP NOT NULL,
            from_state VARCHAR NOT NULL,
            to_state VARCHAR NOT NULL,
            value DOUBLE,
            threshold DOUBLE,
            baseline DOUBLE,
            samples BIGINT,
            examples VARCHAR[],
            notify_status VARCHAR NOT NULL DEFAULT 'none',
            notify_error VARCHAR
        )
        """
    )
    op.execute(
        """
        CREATE TABLE alert_samples (
            rule VARCHAR NOT NULL,
            sampled_at TIMESTAMP NOT NULL,
            value DOUBLE,
            samples BIGINT NOT NULL
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE alert_samples")
    op.execute("DROP TABLE alert_events")
    op.execute("DROP SEQUENCE alert_event_id")
    op.execute("DROP TABLE alert_rules")
