"""spans: session_id, provider, cache tokens, result hash, argument features; run_facts: session_id,
arguments_captured; run_loops: scope, session_id, no_progress

Revision ID: 0009
Revises: 0008

Read from every framework's instrumentation (docs/frameworks.md): the conversation a span
belongs to, the model's provider and its cached and cache-write input tokens (included in the
input tokens), a tool result's hash; per run its session and whether the producer sent the
tool arguments loops are judged by. Detection v2 (docs/detection.md) replaces the lexical
sketch by argument features (structure frame, text words, identifiers, a word-vector sum) and
finds loops across a session's runs too. The run rules changed too (a run named by its named agent
span, its end by the framework's signal): every stored trace is derived again.
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

SPANS = (
    ("session_id", "VARCHAR"),
    ("provider", "VARCHAR"),
    ("cache_read_tokens", "BIGINT"),
    ("cache_write_tokens", "BIGINT"),
    ("result_hash", "VARCHAR"),
    ("args_frame", "UBIGINT"),
    ("args_text_fp", "UBIGINT"),
    ("args_words", "UBIGINT[]"),
    ("args_ents", "UBIGINT[]"),
    ("args_vec", "TINYINT[]"),
    ("args_vec_norm", "FLOAT"),
)
RUN_FACTS = (("session_id", "VARCHAR"), ("arguments_captured", "BOOLEAN"))
RUN_LOOPS = (("scope", "VARCHAR DEFAULT 'run'"), ("session_id", "VARCHAR"), ("no_progress", "BOOLEAN"))


def upgrade() -> None:
    for name, kind in SPANS:
        op.execute(f"ALTER TABLE spans ADD COLUMN {name} {kind}")
    op.execute("ALTER TABLE spans DROP COLUMN args_sketch")
    for name, kind in RUN_FACTS:
        op.execute(f"ALTER TABLE run_facts ADD COLUMN {name} {kind}")
    for name, kind in RUN_LOOPS:
        op.execute(f"ALTER TABLE run_loops ADD COLUMN {name} {kind}")
    op.execute('INSERT INTO derive_pending SELECT "TraceId", min("Timestamp") FROM spans GROUP BY "TraceId"')


def downgrade() -> None:
    for name, _ in RUN_LOOPS:
        op.execute(f"ALTER TABLE run_loops DROP COLUMN {name}")
    op.execute("ALTER TABLE spans ADD COLUMN args_sketch UBIGINT")
    for name, _ in RUN_FACTS:
        op.execute(f"ALTER TABLE run_facts DROP COLUMN {name}")
    for name, _ in SPANS:
        op.execute(f"ALTER TABLE spans DROP COLUMN {name}")
