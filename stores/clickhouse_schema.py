"""The ClickHouse migrations: ordered steps recorded in ``loopsight_schema_migrations``, then the model.

The DDL they apply is :mod:`loopsight.stores.clickhouse_ddl`. Those that built the earlier model
(0002-0011: typed columns materialized on ``otel_traces``, a ``spans`` view, a run index) are
gone: 0012 drops what they made and creates the one model, which the store then fills from
``otel_traces`` (the import starts from the oldest span), so existing data is kept. The model's
tables and columns are no migrations since: :func:`to_model`, after them, renders what the store
lacks from :mod:`loopsight.model` (a table or column new to the spans or a derived table queues
every trace), as 0015_run_step_totals and 0016_cost did by hand.

Example:
    >>> from loopsight.stores.clickhouse import connect_chdb
    >>> con = connect_chdb("/tmp/loopsight-doc-ch")  # doctest: +SKIP
    >>> upgrade(con)  # doctest: +SKIP
    ['0004_alerts', '0007_alert_deliveries', '0012_one_model', ...]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from loopsight.model import ALERT_TABLES, DERIVED, TABLES
from loopsight.stores.clickhouse import ClickHouseConnection
from loopsight.stores.clickhouse_ddl import (
    ALERT_DELIVERIES,
    ALERT_VIEWS,
    IMPORT_STATE,
    RETENTION_FLOOR,
    SECRET_TABLE,
    STORED,
    column_type,
    model_table_ddl,
)

REDERIVE = "INSERT INTO derive_pending SELECT TraceId, min(Timestamp) FROM spans GROUP BY TraceId"
"""Queue every stored trace: the run rules changed, so every run is derived again."""

_EARLIER_MODEL = (
    "DROP VIEW IF EXISTS typed_spans",
    "DROP TABLE IF EXISTS loopsight_spans",
    "DROP VIEW IF EXISTS spans",
    "DROP TABLE IF EXISTS loopsight_run_index",
    "DROP TABLE IF EXISTS loopsight_run_index_state",
    "DROP TABLE IF EXISTS loopsight_run_loops",
    "DROP TABLE IF EXISTS loopsight_run_steps",
    "DROP TABLE IF EXISTS loopsight_run_members",
)
_EARLIER_COLUMNS = (
    "span_type",
    "operation",
    "agent",
    "step",
    "tool",
    "args_hash",
    "args_sketch",
    "model",
    "error_type",
    "error_class",
    "input_tokens",
    "output_tokens",
    "termination_reason",
    "fallback",
    "loop_kind",
    "attempts",
)


def exported(con: ClickHouseConnection, table: str | None = None) -> bool:
    """Whether the exporter's table (``con.url.table``) exists yet (the exporter creates it), or ``table``."""
    query = "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = {t:String}"
    return bool(con.execute(query, {"t": table or con.url.table}).fetchall()[0][0])


def _one_model(con: ClickHouseConnection) -> list[str]:
    drops = ", ".join(f"DROP COLUMN IF EXISTS loopsight_{name}" for name in _EARLIER_COLUMNS)
    return [
        *_EARLIER_MODEL,
        *([f"ALTER TABLE {con.url.table} {drops}"] if exported(con) else []),
        *(model_table_ddl(table) for table in TABLES),
        IMPORT_STATE,
    ]


@dataclass(frozen=True)
class Migration:
    """One ordered step: its id and the statements it runs on a connection."""

    version: str
    statements: Callable[[ClickHouseConnection], list[str]]


MIGRATIONS: tuple[Migration, ...] = (
    Migration("0004_alerts", lambda con: [model_table_ddl(table) for table in ALERT_TABLES]),
    Migration("0007_alert_deliveries", lambda con: list(ALERT_DELIVERIES)),
    Migration("0012_one_model", _one_model),
    Migration("0013_alert_views", lambda con: list(ALERT_VIEWS)),
    Migration(
        "0014_sessions_and_frameworks",
        lambda con: ["ALTER TABLE spans DROP COLUMN IF EXISTS args_sketch", SECRET_TABLE],
    ),
    Migration("0017_retention_floor", lambda con: [RETENTION_FLOOR]),
)
"""The steps no model can say (what earlier models made, views); the model's own tables and
columns are made by :func:`to_model`. The exporter's ``otel_traces`` is no step (0001 made it
until the exporter was left to create it)."""

_LEDGER = """CREATE TABLE IF NOT EXISTS loopsight_schema_migrations (
    version String,
    applied_at DateTime64(3) DEFAULT now64(3)
) ENGINE = MergeTree ORDER BY version"""


def applied(con: ClickHouseConnection) -> list[str]:
    """The migration ids already applied, in order (the ledger made if missing: a read-only account's
    reader of a current store runs no DDL)."""
    if not exported(con, "loopsight_schema_migrations"):
        con.command(_LEDGER)
    return [
        row[0]
        for row in con.execute("SELECT DISTINCT version FROM loopsight_schema_migrations ORDER BY version").fetchall()
    ]


def to_model(con: ClickHouseConnection) -> list[str]:
    """Create the tables and columns of :data:`loopsight.model.TABLES` the store lacks; when the
    spans or a derived table gained any, queue every trace (the rules that fill them changed too).
    Returns the statements run.
    """
    query = "SELECT table, name FROM system.columns WHERE database = currentDatabase()"
    found = {(table, name) for table, name in con.execute(query).fetchall()}
    tables = {table for table, _ in found}
    statements, changed = [], set()
    for table, columns in STORED.items():
        missing = [c for c in columns if (table, c.name) not in found]
        if missing:
            changed.add(table)
        if table not in tables:
            statements.append(model_table_ddl(table))
            continue
        for column in missing:
            statements.append(
                f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS `{column.name}` {column_type(table, column)}"
            )
    if changed & {"spans", *DERIVED}:
        statements.append(REDERIVE)
    for statement in statements:
        con.command(statement)
    return statements


def upgrade(con: ClickHouseConnection) -> list[str]:
    """Apply the missing migrations in order, then bring the tables to the model; returns the
    ids of the migrations applied now."""
    done = set(applied(con))
    now = []
    for migration in MIGRATIONS:
        if migration.version in done:
            continue
        for statement in migration.statements(con):
            con.command(statement)
        con.execute("INSERT INTO loopsight_schema_migrations (version) VALUES ({v:String})", {"v": migration.version})
        now.append(migration.version)
    to_model(con)
    return now
