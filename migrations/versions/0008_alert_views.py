"""views of the alert state that both engines hold: alert_rules_current, alert_events_current

Revision ID: 0008
Revises: 0007

The Alerts page's questions read these views, written once in DuckDB SQL and translated for
ClickHouse, whose alert tables differ (ReplacingMergeTree rows, delivery outcomes as rows of
their own): there the views resolve what DuckDB simply stores.
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE VIEW alert_rules_current AS SELECT * FROM alert_rules")
    op.execute("CREATE VIEW alert_events_current AS SELECT * FROM alert_events")


def downgrade() -> None:
    op.execute("DROP VIEW alert_events_current")
    op.execute("DROP VIEW alert_rules_current")
