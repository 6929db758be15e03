"""spans without the primary-key index: duplicates are skipped by the writer instead

Revision ID: 0003
Revises: 0002

The (TraceId, SpanId) primary key kept an in-memory ART index that grows with the table
(and slowed every insert). A re-delivered span carries the same start time as the
original, so the writer finds duplicates with an anti-join limited to the incoming
batch's time range (zone maps skip the rest). The table is rebuilt with its data.
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

ATTR_MAP = "MAP(VARCHAR, VARCHAR)"


def _create(name: str, primary_key: bool) -> None:
    key = ',\n            PRIMARY KEY ("TraceId", "SpanId")' if primary_key else ""
    op.execute(
        f"""
        CREATE TABLE {name} (
            "Timestamp" TIMESTAMP NOT NULL,
            "TraceId" VARCHAR NOT NULL,
            "SpanId" VARCHAR NOT NULL,
            "ParentSpanId" VARCHAR NOT NULL DEFAULT '',
            "TraceState" VARCHAR NOT NULL DEFAULT '',
            "SpanName" VARCHAR NOT NULL,
            "SpanKind" VARCHAR NOT NULL,
            "ServiceName" VARCHAR NOT NULL DEFAULT '',
            "ResourceAttributes" {ATTR_MAP},
            "ScopeName" VARCHAR NOT NULL DEFAULT '',
            "ScopeVersion" VARCHAR NOT NULL DEFAULT '',
            "SpanAttributes" {ATTR_MAP},
            "Duration" BIGINT NOT NULL,
            "StatusCode" VARCHAR NOT NULL DEFAULT 'Unset',
            "StatusMessage" VARCHAR NOT NULL DEFAULT '',
            "Events" STRUCT("Timestamp" TIMESTAMP, "Name" VARCHAR, "Attributes" {ATTR_MAP})[],
            "Links" STRUCT("TraceId" VARCHAR, "SpanId" VARCHAR, "TraceState" VARCHAR, "Attributes" {ATTR_MAP})[],
            span_type VARCHAR NOT NULL,
            operation VARCHAR,
            agent VARCHAR,
            run_id VARCHAR,
            step INTEGER,
            tool VARCHAR,
            args_hash VARCHAR,
            args_sketch UBIGINT,
            model VARCHAR,
            error_type VARCHAR,
            error_class VARCHAR,
            input_tokens BIGINT,
            output_tokens BIGINT,
            termination_reason VARCHAR,
            fallback VARCHAR,
            loop_kind VARCHAR,
            attempts INTEGER,
            end_time TIMESTAMP NOT NULL,
            ingested_at TIMESTAMP NOT NULL DEFAULT current_timestamp{key}
        )
        """
    )


def _rebuild(primary_key: bool) -> None:
    _create("spans_rebuilt", primary_key)
    # Oldest first, so the time zone maps of the new table are tight.
    op.execute('INSERT INTO spans_rebuilt SELECT * FROM spans ORDER BY "Timestamp"')
    op.execute("DROP TABLE spans")
    op.execute("ALTER TABLE spans_rebuilt RENAME TO spans")


def upgrade() -> None:
    _rebuild(primary_key=False)


def downgrade() -> None:
    # Keep one copy of each (TraceId, SpanId) so the key can be restored.
    op.execute('DELETE FROM spans WHERE rowid NOT IN (SELECT min(rowid) FROM spans GROUP BY "TraceId", "SpanId")')
    _rebuild(primary_key=True)
