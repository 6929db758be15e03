"""run_calls, model_prices; run_facts: cache tokens (token economics, issue 22)

Revision ID: 0011
Revises: 0010

What a run costs is priced when it is read: ``run_calls`` keeps each model call's provider, model
and tokens (cached and cache-write included), ``model_prices`` the prices per million tokens the
store's writer resolves for every pair it holds (rewritten whenever a writer opens, so a corrected
price file reprices history). ``run_facts`` gains the runs' cached and cache-write input tokens.
Every stored trace is queued: the deriver fills ``run_calls`` and prices what it finds.
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE run_calls (
            trace_id VARCHAR NOT NULL,
            run_id VARCHAR NOT NULL,
            agent VARCHAR,
            service VARCHAR,
            started_at TIMESTAMP NOT NULL,
            span_id VARCHAR NOT NULL,
            ts TIMESTAMP NOT NULL,
            step BIGINT,
            provider VARCHAR NOT NULL,
            model VARCHAR NOT NULL,
            input_tokens BIGINT NOT NULL,
            output_tokens BIGINT NOT NULL,
            cache_read_tokens BIGINT NOT NULL,
            cache_write_tokens BIGINT NOT NULL,
            ingested_at TIMESTAMP NOT NULL
        )
        """
    )
    op.execute(
        """
        CREATE TABLE model_prices (
            provider VARCHAR NOT NULL,
            model VARCHAR NOT NULL,
            valid_from TIMESTAMP NOT NULL,
            valid_until TIMESTAMP NOT NULL,
            input_from BIGINT NOT NULL,
            input_to BIGINT NOT NULL,
            input_mtok DOUBLE,
            cache_read_mtok DOUBLE,
            cache_write_mtok DOUBLE,
            output_mtok DOUBLE,
            priced_as VARCHAR,
            source VARCHAR
        )
        """
    )
    op.execute("ALTER TABLE run_facts ADD COLUMN cache_read_tokens BIGINT")
    op.execute("ALTER TABLE run_facts ADD COLUMN cache_write_tokens BIGINT")
    op.execute('INSERT INTO derive_pending SELECT "TraceId", min("Timestamp") FROM spans GROUP BY "TraceId"')


def downgrade() -> None:
    op.execute("ALTER TABLE run_facts DROP COLUMN cache_write_tokens")
    op.execute("ALTER TABLE run_facts DROP COLUMN cache_read_tokens")
    op.execute("DROP TABLE model_prices")
    op.execute("DROP TABLE run_calls")
