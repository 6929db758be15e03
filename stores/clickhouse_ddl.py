"""The ClickHouse DDL of loopsight's tables.

They are rendered from :mod:`loopsight.model` (``spans``, the per-run tables,
``derive_pending``, the alert tables) with ClickHouse's engines, keys and partitions, plus
``spans_staged`` and the few tables and views only ClickHouse has. The exporter's
``otel_traces`` is the exporter's: it creates it (``create_schema``), loopsight only reads it.
The migrations that apply them: :mod:`loopsight.stores.clickhouse_schema`.

Example:
    >>> model_table_ddl("derive_pending").splitlines()[1]
    '    `trace_id` String,'
"""

from __future__ import annotations

from loopsight.model import ALERT_TABLES, DERIVED, TABLES, Column
from loopsight.stores.translate import clickhouse_type

# The evaluator's state on ClickHouse (loopsight.alerts.state_clickhouse): a notification's
# outcome is a row keyed by its event instead of an UPDATE (migration 0007).
ALERT_DELIVERIES = (
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
STORED = {**TABLES, "spans_staged": TABLES["spans"]}
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


def column_type(table: str, column: Column) -> str:
    """A model column's ClickHouse type in ``table``."""
    return _TYPES.get((table, column.name)) or clickhouse_type(column.type, nullable=column.nullable)


def model_table_ddl(table: str) -> str:
    """``CREATE TABLE`` of one :data:`loopsight.model.TABLES` or ``ALERT_TABLES`` table on ClickHouse.

    Example:
        >>> model_table_ddl("derive_pending").splitlines()[1]
        '    `trace_id` String,'
    """
    columns = []
    for column in {**STORED, **ALERT_TABLES}[table]:
        kind = column_type(table, column)
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

RETENTION_FLOOR = "ALTER TABLE loopsight_import ADD COLUMN IF NOT EXISTS retained_before DateTime64(9)"
"""Where the import starts at the earliest: retention's newest cutoff (a row of its own, ``watermark`` 0). Spans
retention deleted are not imported again from ``otel_traces`` (the exporter's, kept for its own ``ttl``)."""
