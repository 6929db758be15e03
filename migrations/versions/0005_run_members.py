"""derived tables run_members (stall facts per span of a run) and run_growth (per-run growth-fit sums)

Revision ID: 0005
Revises: 0004

The Stalls page judged every call of the window against the cross-run p95s by reading the
spans, and the Token burn page fitted the growth exponent from every step. The per-run part
of both moves to ingest like run_loops/run_steps: ``run_members`` holds, per member span of a
run, its own call time, retry backoff, the idle gap before it and its start offset (the rows
of ``stalls_members.sql``); ``run_growth`` holds each run's centred log-log sums (the rows of
``burn_growth.sql``). The writer recomputes them for the traces a commit touched
(``loopsight.stores.derive``). Migration 0007 queues every stored trace for derivation, which fills them and
recomputes the other derived tables too: ``run_facts.llm_calls`` no longer counts an llm span
nested under an llm span (another instrumentation's chat span inside our model call).
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE run_members (
            trace_id VARCHAR NOT NULL,
            run_id VARCHAR NOT NULL,
            span_id VARCHAR NOT NULL,
            agent VARCHAR,
            service VARCHAR,
            started_at TIMESTAMP NOT NULL,
            span_type VARCHAR,
            what VARCHAR,
            call_ms DOUBLE,
            backoff_ms DOUBLE,
            gap_ms DOUBLE,
            at_ms DOUBLE
        )
        """
    )
    op.execute(
        """
        CREATE TABLE run_growth (
            trace_id VARCHAR NOT NULL,
            run_id VARCHAR NOT NULL,
            agent VARCHAR,
            service VARCHAR,
            started_at TIMESTAMP NOT NULL,
            points BIGINT NOT NULL,
            sxx DOUBLE NOT NULL,
            sxy DOUBLE NOT NULL,
            syy DOUBLE NOT NULL
        )
        """
    )


def downgrade() -> None:
    for name in ("run_growth", "run_members"):
        op.execute(f"DROP TABLE {name}")
