"""The ClickHouse schema: the exporter's ``otel_traces`` as it makes it, plus loopsight's tables.

``otel_traces`` (and its ``_trace_id_ts`` lookup table and view) is created exactly as the
OpenTelemetry Collector contrib ``clickhouseexporter`` creates it
(``exporter/clickhouseexporter/internal/sql_templates/traces_table.sql``), so an exporter
and loopsight can share a database in either start-up order. loopsight never changes its
columns. Beside it, loopsight keeps the same tables as on DuckDB (:mod:`loopsight.model`:
``spans``, the per-run tables, ``derive_pending``), filled by the ClickHouse store
(:mod:`loopsight.stores.clickhouse_store`), and the alert evaluator's state.

Ordered migrations are recorded in ``loopsight_schema_migrations``. Those that built the
earlier model (0002-0011: typed columns materialized on ``otel_traces``, a ``spans`` view, a run
index) are gone: 0012 drops what they made and creates the one model, which the store then
fills from ``otel_traces`` (the import starts from the oldest span), so existing data is kept.
The model's tables and columns are no migrations since: :func:`to_model`, after them, renders
what the store lacks from :mod:`loopsight.model` (a table or column new to the spans or a
derived table queues every trace), as 0015_run_step_totals and 0016_cost did by hand.

Example:
    >>> from loopsight.stores.clickhouse import connect_chdb
    >>> con = connect_chdb("/tmp/loopsight-doc-ch")  # doctest: +SKIP
    >>> upgrade(con)  # doctest: +SKIP
    ['0001_otel_traces', '0004_alerts', '0007_alert_deliveries', '0012_one_model', ...]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from loopsight.model import ALERT_TABLES, DERIVED, TABLES, clickhouse_type
from loopsight.stores.clickhouse import ClickHouseConnection

# traces_table.sql of the exporter, rendered as its Go code renders it: %s %s = "db"."table"
# plus the cluster clause, ENGINE = %s, then the TTL expression.
EXPORTER_TRACES_TABLE = """CREATE TABLE IF NOT EXISTS {table} {cluster} (
    Timestamp DateTime64(9) CODEC(Delta, ZSTD(1)),
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    ParentSpanId String CODEC(ZSTD(1)),
    TraceState String CODEC(ZSTD(1)),
    SpanName LowCardinality(String) CODEC(ZSTD(1)),
    SpanKind LowCardinality(String) CODEC(ZSTD(1)),
    ServiceName LowCardinality(String) CODEC(ZSTD(1)),
    ResourceAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    ScopeName String CODEC(ZSTD(1)),
    ScopeVersion String CODEC(ZSTD(1)),
    SpanAttributes Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    Duration UInt64 CODEC(ZSTD(1)),
    StatusCode LowCardinality(String) CODEC(ZSTD(1)),
    StatusMessage String CODEC(ZSTD(1)),
    Events Nested (
        Timestamp DateTime64(9),
        Name LowCardinality(String),
        Attributes Map(LowCardinality(String), String)
    ) CODEC(ZSTD(1)),
    Links Nested (
        TraceId String,
        SpanId String,
        TraceState String,
        Attributes Map(LowCardinality(String), String)
    ) CODEC(ZSTD(1)),
    INDEX idx_trace_id TraceId TYPE bloom_filter(0.001) GRANULARITY 1,
    INDEX idx_res_attr_key mapKeys(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_res_attr_value mapValues(ResourceAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_span_attr_key mapKeys(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_span_attr_value mapValues(SpanAttributes) TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_duration Duration TYPE minmax GRANULARITY 1
) ENGINE = {engine}
PARTITION BY toDate(Timestamp)
ORDER BY (ServiceName, SpanName, toDateTime(Timestamp))
{ttl}
SETTINGS index_granularity=8192, ttl_only_drop_parts = 1"""

EXPORTER_TRACE_ID_TS_TABLE = """CREATE TABLE IF NOT EXISTS {table}_trace_id_ts {cluster} (
    TraceId String CODEC(ZSTD(1)),
    Start DateTime CODEC(Delta, ZSTD(1)),
    End DateTime CODEC(Delta, ZSTD(1)),
    INDEX idx_trace_id TraceId TYPE bloom_filter(0.01) GRANULARITY 1
) ENGINE = {engine}
PARTITION BY toDate(Start)
ORDER BY (TraceId, Start)
{ttl_ts}
SETTINGS index_granularity=8192, ttl_only_drop_parts = 1"""

EXPORTER_TRACE_ID_TS_VIEW = """CREATE MATERIALIZED VIEW IF NOT EXISTS {table}_trace_id_ts_mv {cluster}
TO {table}_trace_id_ts
AS SELECT
    TraceId,
    min(Timestamp) as Start,
    max(Timestamp) as End
FROM {table}
WHERE TraceId != ''
GROUP BY TraceId"""


@dataclass(frozen=True)
class SchemaOptions:
    """How to render the DDL: table name, cluster, engine and retention (days, 0 = keep)."""

    table: str = "otel_traces"
    cluster: str = ""
    engine: str = "MergeTree()"
    ttl_days: int = 0

    def render(self, template: str) -> str:
        cluster = f"ON CLUSTER {self.cluster}" if self.cluster else ""
        ttl = f"TTL toDateTime(Timestamp) + toIntervalDay({self.ttl_days})" if self.ttl_days > 0 else ""
        ttl_ts = f"TTL toDateTime(Start) + toIntervalDay({self.ttl_days})" if self.ttl_days > 0 else ""
        return template.format(table=self.table, cluster=cluster, engine=self.engine, ttl=ttl, ttl_ts=ttl_ts)


# The evaluator's state on ClickHouse (loopsight.alerts.state_clickhouse): a notification's
# outcome is a row keyed by its event instead of an UPDATE.
ALERT_STATE_0007 = (
    """CREATE TABLE IF NOT EXISTS alert_deliveries (
    event_id UInt64,
    status LowCardinality(String),
    error Nullable(String),
    at DateTime64(6)
) ENGINE = ReplacingMergeTree(at)
ORDER BY event_id""",
)


# Spans wait in ``spans_staged`` (the spans' columns) until a pass derives them: written to
# ``spans`` once, derived, instead of deleted and written again (a DELETE marks every part).
_STORED = {**TABLES, "spans_staged": TABLES["spans"]}
_ORDER = {"spans": "(TraceId, SpanId)", "spans_staged": "(TraceId, SpanId)", "derive_pending": "trace_id"}
_ORDER |= {"model_prices": "(provider, model)"} | {name: "(trace_id, run_id)" for name in DERIVED}
_ORDER |= {"alert_rules": "name", "alert_events": "(rule, occurred_at, id)", "alert_samples": "(rule, sampled_at)"}
_PARTITION = {"spans": "toDate(Timestamp)"} | {name: "toDate(started_at)" for name in DERIVED}
# Nothing is updated in place (loopsight.alerts.state_clickhouse): a rule's every change is a
# new row of the whole rule, the newest kept.
_ENGINE = {"alert_rules": "ReplacingMergeTree(updated_at)"}
_EXTRA = {"alert_rules": ["    `updated_at` DateTime64(6) DEFAULT now64(6)"]}
_DEFAULTS = {"current_timestamp": "now64(6)", "nextval('alert_event_id')": None}  # ids are made by the writer
_TYPES = {("alert_events", "id"): "UInt64"}  # as alert_deliveries.event_id, which joins it


def _nullable(kind: str, nullable: bool) -> bool:
    return nullable and "[" not in kind and not kind.startswith(("MAP", "STRUCT"))


def model_table_ddl(table: str) -> str:
    """``CREATE TABLE`` of one :data:`loopsight.model.TABLES` or ``ALERT_TABLES`` table on ClickHouse.

    Example:
        >>> model_table_ddl("derive_pending").splitlines()[1]
        '    `trace_id` String,'
    """
    columns = []
    for column in {**_STORED, **ALERT_TABLES}[table]:
        kind = _TYPES.get((table, column.name)) or clickhouse_type(
            column.type, nullable=_nullable(column.type, column.nullable)
        )
        default = _DEFAULTS.get(column.default or "", column.default)
        columns.append(f"    `{column.name}` {kind}" + (f" DEFAULT {default}" if default is not None else ""))
    partition = f"\nPARTITION BY {_PARTITION[table]}" if table in _PARTITION else ""
    body = ",\n".join(columns + _EXTRA.get(table, []))
    engine = _ENGINE.get(table, "MergeTree")
    return f"CREATE TABLE IF NOT EXISTS {table} (\n{body}\n) ENGINE = {engine}{partition}\nORDER BY {_ORDER[table]}"


ALERT_VIEWS = (
    "CREATE OR REPLACE VIEW alert_rules_current AS SELECT * EXCEPT (updated_at) FROM alert_rules FINAL",
    """CREATE OR REPLACE VIEW alert_events_current AS
    SELECT e.id AS id, e.rule AS rule, e.occurred_at AS occurred_at, e.from_state AS from_state, e.to_state AS to_state,
           e.value AS value, e.threshold AS threshold, e.baseline AS baseline, e.samples AS samples, e.examples AS examples,
           if(ifNull(d.status, '') = '', e.notify_status, d.status) AS notify_status,
           if(ifNull(d.status, '') = '', e.notify_error, d.error) AS notify_error
    FROM alert_events e
    LEFT JOIN (SELECT event_id, status, error FROM alert_deliveries FINAL) d ON d.event_id = e.id
    SETTINGS join_use_nulls = 1""",
)
"""The alert state as DuckDB holds it (``alert_rules_current``, ``alert_events_current``): the
questions read these, written once (``loopsight.analytics.alert_state``)."""


REDERIVE = "INSERT INTO derive_pending SELECT TraceId, min(Timestamp) FROM spans GROUP BY TraceId"
"""Queue every stored trace: the run rules changed, so every run is derived again."""

SECRET_TABLE = """CREATE TABLE IF NOT EXISTS loopsight_secret (
    key String,
    created_at DateTime64(6) DEFAULT now64(6)
) ENGINE = MergeTree ORDER BY created_at"""
"""The store's secret key (:meth:`ClickHouseStore.secret_key`): the first row written."""

IMPORT_STATE = """CREATE TABLE IF NOT EXISTS loopsight_import (
    watermark DateTime64(9),
    updated_at DateTime64(6) DEFAULT now64(6)
) ENGINE = MergeTree ORDER BY updated_at"""
"""How far the store has read ``otel_traces`` (the newest span start seen; it re-reads a look-back before it)."""

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


def _one_model(options: SchemaOptions) -> list[str]:
    cluster = f" ON CLUSTER {options.cluster}" if options.cluster else ""
    drops = ", ".join(f"DROP COLUMN IF EXISTS loopsight_{name}" for name in _EARLIER_COLUMNS)
    return [
        *_EARLIER_MODEL,
        f"ALTER TABLE {options.table}{cluster} {drops}",
        *(model_table_ddl(table) for table in TABLES),
        IMPORT_STATE,
    ]


@dataclass(frozen=True)
class Migration:
    """One ordered step: its id and the statements it runs."""

    version: str
    statements: Callable[[SchemaOptions], list[str]]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "0001_otel_traces",
        lambda o: [
            o.render(EXPORTER_TRACES_TABLE),
            o.render(EXPORTER_TRACE_ID_TS_TABLE),
            o.render(EXPORTER_TRACE_ID_TS_VIEW),
        ],
    ),
    Migration("0004_alerts", lambda o: [model_table_ddl(table) for table in ALERT_TABLES]),
    Migration("0007_alert_deliveries", lambda o: list(ALERT_STATE_0007)),
    Migration("0012_one_model", _one_model),
    Migration("0013_alert_views", lambda o: list(ALERT_VIEWS)),
    Migration(
        "0014_sessions_and_frameworks", lambda o: ["ALTER TABLE spans DROP COLUMN IF EXISTS args_sketch", SECRET_TABLE]
    ),
)
"""The steps no model can say (the exporter's table, what earlier models made, views); the
model's own tables and columns are made by :func:`to_model`."""

_LEDGER = """CREATE TABLE IF NOT EXISTS loopsight_schema_migrations (
    version String,
    applied_at DateTime64(3) DEFAULT now64(3)
) ENGINE = MergeTree ORDER BY version"""


def applied(con: ClickHouseConnection) -> list[str]:
    """The migration ids already applied, in order."""
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
    for table, columns in _STORED.items():
        missing = [c for c in columns if (table, c.name) not in found]
        if missing:
            changed.add(table)
        if table not in tables:
            statements.append(model_table_ddl(table))
            continue
        for column in missing:
            kind = clickhouse_type(column.type, nullable=_nullable(column.type, column.nullable))
            statements.append(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS `{column.name}` {kind}")
    if changed & {"spans", *DERIVED}:
        statements.append(REDERIVE)
    for statement in statements:
        con.command(statement)
    return statements


def upgrade(con: ClickHouseConnection, options: SchemaOptions | None = None) -> list[str]:
    """Apply the missing migrations in order, then bring the tables to the model; returns the
    ids of the migrations applied now."""
    options = options or SchemaOptions(table=con.url.table)
    done = set(applied(con))
    now = []
    for migration in MIGRATIONS:
        if migration.version in done:
            continue
        for statement in migration.statements(options):
            con.command(statement)
        con.execute("INSERT INTO loopsight_schema_migrations (version) VALUES ({v:String})", {"v": migration.version})
        now.append(migration.version)
    to_model(con)
    return now
