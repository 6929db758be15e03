"""The stored data model, as data: the spans table and the derived per-run tables.

Both engines hold exactly these tables. DuckDB's are made by the migrations (``migrations/``,
frozen history; a test checks the migrated file against this module), ClickHouse's are rendered
from here (``loopsight.stores.clickhouse_ddl``, SQLGlot spelling the types), the ClickHouse deriver's in-memory DuckDB from
:func:`duckdb_ddl`, and the SQL translator reads the column types from :data:`TABLES`. The
``spans`` columns are those of the OpenTelemetry Collector ClickHouse exporter's ``otel_traces``
plus loopsight's typed agent columns, filled at ingest.

Example:
    >>> [c.name for c in TABLES["derive_pending"]]
    ['trace_id', 'since']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Column:
    """One stored column: its name, its DuckDB type, whether it may be NULL, its default (SQL)."""

    name: str
    type: str
    nullable: bool = True
    default: str | None = None


def _cols(*specs: tuple[str, str] | tuple[str, str, bool] | tuple[str, str, bool, str]) -> tuple[Column, ...]:
    return tuple(Column(*spec) for spec in specs)


ATTR_MAP = "MAP(VARCHAR, VARCHAR)"
EVENTS = f'STRUCT("Timestamp" TIMESTAMP, "Name" VARCHAR, "Attributes" {ATTR_MAP})[]'
LINKS = f'STRUCT("TraceId" VARCHAR, "SpanId" VARCHAR, "TraceState" VARCHAR, "Attributes" {ATTR_MAP})[]'
NOT_NULL = False

SPANS = _cols(
    ("Timestamp", "TIMESTAMP", NOT_NULL),
    ("TraceId", "VARCHAR", NOT_NULL),
    ("SpanId", "VARCHAR", NOT_NULL),
    ("ParentSpanId", "VARCHAR", NOT_NULL, "''"),
    ("TraceState", "VARCHAR", NOT_NULL, "''"),
    ("SpanName", "VARCHAR", NOT_NULL),
    ("SpanKind", "VARCHAR", NOT_NULL),
    ("ServiceName", "VARCHAR", NOT_NULL, "''"),
    ("ResourceAttributes", ATTR_MAP),
    ("ScopeName", "VARCHAR", NOT_NULL, "''"),
    ("ScopeVersion", "VARCHAR", NOT_NULL, "''"),
    ("SpanAttributes", ATTR_MAP),
    ("Duration", "BIGINT", NOT_NULL),
    ("StatusCode", "VARCHAR", NOT_NULL, "'Unset'"),
    ("StatusMessage", "VARCHAR", NOT_NULL, "''"),
    ("Events", EVENTS),
    ("Links", LINKS),
    ("span_type", "VARCHAR", NOT_NULL),
    ("operation", "VARCHAR"),
    ("agent", "VARCHAR"),
    ("run_id", "VARCHAR"),
    ("step", "INTEGER"),
    ("tool", "VARCHAR"),
    ("args_hash", "VARCHAR"),
    ("model", "VARCHAR"),
    ("error_type", "VARCHAR"),
    ("error_class", "VARCHAR"),
    ("input_tokens", "BIGINT"),
    ("output_tokens", "BIGINT"),
    ("termination_reason", "VARCHAR"),
    ("fallback", "VARCHAR"),
    ("loop_kind", "VARCHAR"),
    ("attempts", "INTEGER"),
    ("end_time", "TIMESTAMP", NOT_NULL),
    ("ingested_at", "TIMESTAMP", NOT_NULL, "current_timestamp"),
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
"""Every span as received, plus its typed agent columns (``run_id`` and a missing ``step`` are derived)."""

_RUN_KEY = (("trace_id", "VARCHAR", NOT_NULL), ("run_id", "VARCHAR", NOT_NULL))
_RUN_SCOPE = (("agent", "VARCHAR"), ("service", "VARCHAR"), ("started_at", "TIMESTAMP", NOT_NULL))

RUN_FACTS = _cols(
    *_RUN_KEY,
    *_RUN_SCOPE,
    ("duration", "BIGINT"),
    ("status_code", "VARCHAR"),
    ("termination_reason", "VARCHAR"),
    ("ok", "BOOLEAN", NOT_NULL),
    ("steps", "BIGINT", NOT_NULL),
    ("llm_calls", "BIGINT", NOT_NULL),
    ("tool_calls", "BIGINT", NOT_NULL),
    ("tool_errors", "BIGINT", NOT_NULL),
    ("retries", "BIGINT", NOT_NULL),
    ("input_tokens", "BIGINT", NOT_NULL),
    ("output_tokens", "BIGINT", NOT_NULL),
    ("loop_marks", "BIGINT", NOT_NULL),
    ("marked_calls", "BIGINT", NOT_NULL),
    ("tools", "VARCHAR[]"),
    ("session_id", "VARCHAR"),
    ("arguments_captured", "BOOLEAN"),
    ("cache_read_tokens", "BIGINT"),
    ("cache_write_tokens", "BIGINT"),
    ("cost_usd", "DOUBLE"),
    ("cache_saved_usd", "DOUBLE"),
    ("unpriced_calls", "BIGINT"),
)
"""One row per run: its rollups (``stores/sql/derive_runs.sql``); the cache tokens are part of
the input tokens. ``cost_usd``, ``cache_saved_usd`` and ``unpriced_calls`` sum its ``run_calls``
(NULL cost: none of them priced), stored when derived and when the prices change (docs/cost.md)."""

RUN_LOOPS = _cols(
    *_RUN_KEY,
    *_RUN_SCOPE,
    ("tool", "VARCHAR"),
    ("kind", "VARCHAR", NOT_NULL),
    ("args_hash", "VARCHAR"),
    ("count", "BIGINT", NOT_NULL),
    ("first_step", "BIGINT"),
    ("first_at", "TIMESTAMP"),
    ("wasted_tokens", "BIGINT", NOT_NULL),
    ("scope", "VARCHAR", True, "'run'"),
    ("session_id", "VARCHAR"),
    ("no_progress", "BOOLEAN"),
)
"""One row per detected loop (``stores/sql/loops_core.sql``)."""

RUN_STEPS = _cols(*_RUN_KEY, *_RUN_SCOPE, ("step", "BIGINT"), ("input_tokens", "BIGINT"))
"""Input tokens per step of each run (``stores/sql/burn_steps.sql``)."""

RUN_GROWTH = _cols(
    *_RUN_KEY,
    *_RUN_SCOPE,
    ("points", "BIGINT", NOT_NULL),
    ("sxx", "DOUBLE", NOT_NULL),
    ("sxy", "DOUBLE", NOT_NULL),
    ("syy", "DOUBLE", NOT_NULL),
)
"""Each run's centred log-log sums for the growth fit (``stores/sql/burn_growth.sql``)."""

RUN_MEMBERS = _cols(
    *_RUN_KEY[:2],
    ("span_id", "VARCHAR", NOT_NULL),
    *_RUN_SCOPE,
    ("span_type", "VARCHAR"),
    ("what", "VARCHAR"),
    ("call_ms", "DOUBLE"),
    ("backoff_ms", "DOUBLE"),
    ("gap_ms", "DOUBLE"),
    ("at_ms", "DOUBLE"),
)
"""Stall facts per member span of a run (``stores/sql/stalls_members.sql``)."""

RUN_STEP_TOTALS = _cols(
    *_RUN_KEY,
    *_RUN_SCOPE,
    ("step", "BIGINT", NOT_NULL),
    ("ordinal", "BIGINT", NOT_NULL),
    ("tool_calls", "BIGINT", NOT_NULL),
    ("tokens", "BIGINT", NOT_NULL),
    ("cum_tool_calls", "BIGINT", NOT_NULL),
    ("cum_tokens", "BIGINT", NOT_NULL),
    ("start_ms", "DOUBLE", NOT_NULL),
    ("end_ms", "DOUBLE", NOT_NULL),
)
"""Per run and step: its tool calls and tokens, the run's totals by its end, when it began and ended
(``stores/sql/step_totals.sql``; the budget advisor's replay, ``docs/budgets.md``)."""

RUN_CALLS = _cols(
    *_RUN_KEY,
    *_RUN_SCOPE,
    ("span_id", "VARCHAR", NOT_NULL),
    ("ts", "TIMESTAMP", NOT_NULL),
    ("step", "BIGINT"),
    ("provider", "VARCHAR", NOT_NULL),
    ("model", "VARCHAR", NOT_NULL),
    ("input_tokens", "BIGINT", NOT_NULL),
    ("output_tokens", "BIGINT", NOT_NULL),
    ("cache_read_tokens", "BIGINT", NOT_NULL),
    ("cache_write_tokens", "BIGINT", NOT_NULL),
    ("ingested_at", "TIMESTAMP", NOT_NULL),
    ("priced", "BOOLEAN"),
    ("cost_usd", "DOUBLE"),
    ("cache_saved_usd", "DOUBLE"),
)
"""One row per model call with tokens (``stores/sql/run_calls.sql``); provider and model as the
span names them (``''``: none). ``priced``, ``cost_usd`` and ``cache_saved_usd``: the call priced
against ``model_prices`` by the rules of :mod:`loopsight.vocabulary` (``stores/sql/call_costs.sql``)
when it is derived, and again whenever the writer's prices change (NULL cost: unpriced)."""

MODEL_PRICES = _cols(
    ("provider", "VARCHAR", NOT_NULL),
    ("model", "VARCHAR", NOT_NULL),
    ("valid_from", "TIMESTAMP", NOT_NULL),
    ("valid_until", "TIMESTAMP", NOT_NULL),
    ("input_from", "BIGINT", NOT_NULL),
    ("input_to", "BIGINT", NOT_NULL),
    ("input_mtok", "DOUBLE"),
    ("cache_read_mtok", "DOUBLE"),
    ("cache_write_mtok", "DOUBLE"),
    ("output_mtok", "DOUBLE"),
    ("priced_as", "VARCHAR"),
    ("source", "VARCHAR"),
)
"""USD per million tokens of every (provider, model) pair ``run_calls`` holds, for calls started
in ``[valid_from, valid_until)`` with input tokens in ``[input_from, input_to)`` (a tier); prices
NULL: unpriced. Written by the store's writer from :class:`loopsight.prices.PriceBook`: all of it
when it opens (the stored costs computed again when it changes), new pairs as they arrive
(docs/cost.md)."""

DERIVE_PENDING = _cols(("trace_id", "VARCHAR", NOT_NULL), ("since", "TIMESTAMP", NOT_NULL))
"""Traces whose derived rows are still to be recomputed, from ``since`` on."""

TABLES: Mapping[str, tuple[Column, ...]] = {
    "spans": SPANS,
    "run_facts": RUN_FACTS,
    "run_loops": RUN_LOOPS,
    "run_steps": RUN_STEPS,
    "run_growth": RUN_GROWTH,
    "run_members": RUN_MEMBERS,
    "run_step_totals": RUN_STEP_TOTALS,
    "run_calls": RUN_CALLS,
    "model_prices": MODEL_PRICES,
    "derive_pending": DERIVE_PENDING,
}
ALERT_RULES = _cols(
    ("name", "VARCHAR", NOT_NULL),
    ("definition", "VARCHAR", NOT_NULL),
    ("active", "BOOLEAN", NOT_NULL, "true"),
    ("state", "VARCHAR", NOT_NULL, "'ok'"),
    ("state_since", "TIMESTAMP"),
    ("pending_since", "TIMESTAMP"),
    ("value", "DOUBLE"),
    ("baseline", "DOUBLE"),
    ("samples", "BIGINT"),
    ("examples", "VARCHAR[]"),
    ("last_evaluated_at", "TIMESTAMP"),
    ("last_notified_at", "TIMESTAMP"),
    ("notified_firing", "BOOLEAN", NOT_NULL, "false"),
)
"""The alert evaluator's memory of each rule (by ``name``): its definition (secrets redacted),
state, pending start and last notification (``loopsight.alerts.state``)."""

ALERT_EVENTS = _cols(
    ("id", "BIGINT", NOT_NULL, "nextval('alert_event_id')"),
    ("rule", "VARCHAR", NOT_NULL),
    ("occurred_at", "TIMESTAMP", NOT_NULL),
    ("from_state", "VARCHAR", NOT_NULL),
    ("to_state", "VARCHAR", NOT_NULL),
    ("value", "DOUBLE"),
    ("threshold", "DOUBLE"),
    ("baseline", "DOUBLE"),
    ("samples", "BIGINT"),
    ("examples", "VARCHAR[]"),
    ("notify_status", "VARCHAR", NOT_NULL, "'none'"),
    ("notify_error", "VARCHAR"),
)
"""One row per lifecycle transition of a rule, and how its notification went."""

ALERT_SAMPLES = _cols(
    ("rule", "VARCHAR", NOT_NULL),
    ("sampled_at", "TIMESTAMP", NOT_NULL),
    ("value", "DOUBLE"),
    ("samples", "BIGINT", NOT_NULL),
)
"""Each evaluation's value (kept for a week)."""

ALERT_TABLES: Mapping[str, tuple[Column, ...]] = {
    "alert_rules": ALERT_RULES,
    "alert_events": ALERT_EVENTS,
    "alert_samples": ALERT_SAMPLES,
}
"""The alert evaluator's tables (DuckDB migration 0002; on ClickHouse rendered from here)."""

DERIVED = ("run_facts", "run_loops", "run_steps", "run_growth", "run_members", "run_step_totals", "run_calls")
"""The per-run tables the derivation fills, keyed by ``trace_id`` and ``started_at``."""


def duckdb_ddl(table: str, *, name: str | None = None) -> str:
    """``CREATE TABLE`` for ``table`` on DuckDB.

    Example:
        >>> duckdb_ddl("derive_pending")
        'CREATE TABLE derive_pending ("trace_id" VARCHAR NOT NULL, "since" TIMESTAMP NOT NULL)'
    """
    parts = []
    for c in TABLES[table]:
        text = f'"{c.name}" {c.type}'
        if c.default is not None:
            text += f" DEFAULT {c.default}"
        if not c.nullable:
            text += " NOT NULL"
        parts.append(text)
    return f"CREATE TABLE {name or table} ({', '.join(parts)})"


def column_types(table: str) -> dict[str, str]:
    """``{column: DuckDB type}`` of ``table`` (for the SQL translator's schema)."""
    return {c.name: c.type for c in TABLES[table]}


def arrow_schema(table: str) -> Any:
    """The Arrow schema of rows of ``table`` (scalar columns and lists of them), for writing them.

    Example:
        >>> arrow_schema("alert_samples").names
        ['rule', 'sampled_at', 'value', 'samples']
    """
    import pyarrow as pa  # only the stores and the alert evaluator write rows

    scalars = {
        "VARCHAR": pa.string(),
        "BOOLEAN": pa.bool_(),
        "TIMESTAMP": pa.timestamp("us"),
        "DOUBLE": pa.float64(),
        "BIGINT": pa.int64(),
    }
    fields = []
    for c in {**TABLES, **ALERT_TABLES}[table]:
        kind = pa.list_(scalars[c.type[:-2]]) if c.type.endswith("[]") else scalars[c.type]
        fields.append((c.name, kind))
    return pa.schema(fields)
