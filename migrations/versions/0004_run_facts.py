"""derived per-run tables: run_facts, run_loops, run_steps (maintained by the writer)

Revision ID: 0004
Revises: 0003

The dashboard's questions are about runs, not spans: these tables hold one row per run
(rollups), the loops detected in each run, and each run's input tokens per step. The
writer recomputes them for the traces a commit touched, inside the same transaction
(``loopsight.stores.derive``). Migration 0007 queues every stored trace for derivation, which fills them.
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE run_facts (
            trace_id VARCHAR NOT NULL,
            run_id VARCHAR NOT NULL,
            agent VARCHAR,
            service VARCHAR,
            started_at TIMESTAMP NOT NULL,
            duration BIGINT,
            status_code VARCHAR,
            termination_reason VARCHAR,
            ok BOOLEAN NOT NULL,
            steps BIGINT NOT NULL,
            llm_calls BIGINT NOT NULL,
            tool_calls BIGINT NOT NULL,
            tool_errors BIGINT NOT NULL,
            retries BIGINT NOT NULL,
            input_tokens BIGINT NOT NULL,
            output_tokens BIGINT NOT NULL,
            loop_marks BIGINT NOT NULL,
            marked_calls BIGINT NOT NULL,
            tools VARCHAR[]
        )
        """
    )
    op.execute(
        """
        CREATE TABLE run_loops (
            trace_id VARCHAR NOT NULL,
            run_id VARCHAR NOT NULL,
            agent VARCHAR,
            service VARCHAR,
            started_at TIMESTAMP NOT NULL,
            tool VARCHAR,
            kind VARCHAR NOT NULL,
            args_hash VARCHAR,
            count BIGINT NOT NULL,
            first_step BIGINT,
            first_at TIMESTAMP,
            wasted_tokens BIGINT NOT NULL
        )
        """
    )
    op.execute(
        """
        CREATE TABLE run_steps (
            trace_id VARCHAR NOT NULL,
            run_id VARCHAR NOT NULL,
            agent VARCHAR,
            service VARCHAR,
            started_at TIMESTAMP NOT NULL,
            step BIGINT,
            input_tokens BIGINT
        )
        """
    )


def downgrade() -> None:
    for name in ("run_steps", "run_loops", "run_facts"):
        op.execute(f"DROP TABLE {name}")
