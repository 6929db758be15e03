"""spans: the otel_traces columns plus typed agent columns

Revision ID: 0001
Revises:
"""

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

ATTR_MAP = "MAP(VARCHAR, VARCHAR)"


def upgrade() -> None:
    # Column names follow the OpenTelemetry Collector ClickHouse exporter's otel_traces
    # table so the same SQL reads both stores; typed agent columns are filled at ingest.
    op.execute(
        f"""
        CREATE TABLE spans (
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
            ingested_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
            PRIMARY KEY ("TraceId", "SpanId")
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE spans")
