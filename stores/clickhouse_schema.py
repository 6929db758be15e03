"""The ClickHouse schema: the exporter's ``otel_traces`` as it makes it, plus loopsight's additions.

``otel_traces`` (and its ``_trace_id_ts`` lookup table and view) is created exactly as the
OpenTelemetry Collector contrib ``clickhouseexporter`` creates it
(``exporter/clickhouseexporter/internal/sql_templates/traces_table.sql``), so an exporter
and loopsight can share a database in either start-up order. loopsight never changes or
drops any of its columns; it only adds columns the exporter does not write.

On top, ordered migrations (recorded in ``loopsight_schema_migrations``):

- ``loopsight_<column>``: ``MATERIALIZED`` columns added to ``otel_traces`` (the
  exporter's INSERT names its columns, so it is unaffected) holding the typed agent
  columns of the DuckDB ``spans`` table, computed at insert from ``SpanAttributes`` by the rules of
  :mod:`loopsight.ingest.normalize` (the SQL is generated from that module's
  vocabularies and error-class patterns, so the two paths cannot drift apart).
- ``spans``: a view with the DuckDB ``spans`` column names, plus ``run_id`` (the top-most
  ``invoke_agent`` ancestor, from the ``loopsight_run_index`` table), so the analytics'
  ClickHouse SQL reads the same names.
- ``alert_rules``, ``alert_events``, ``alert_samples``, ``alert_deliveries``: alert state
  (:mod:`loopsight.alerts.state_clickhouse`).

Example:
    >>> from loopsight.stores.clickhouse import connect_chdb
    >>> con = connect_chdb("/tmp/loopsight-doc-ch")  # doctest: +SKIP
    >>> upgrade(con)  # doctest: +SKIP
    ['0001_otel_traces', '0002_typed_columns', '0003_spans_view', '0004_alerts', '0005_run_index']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from loopsight import attributes as A
from loopsight.ingest import normalize as N
from loopsight.stores.clickhouse import ClickHouseConnection
from loopsight.stores.clickhouse_run_index import INDEX_TABLE, STATE_TABLE
from loopsight.stores.clickhouse_sketch import sketch_sql
from loopsight.stores.otel_rows import ARGS_SKETCH_KEY

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


# --- the typed columns, generated from loopsight.ingest.normalize ----------------------


def _lit(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _attr(key: str) -> str:
    return f"SpanAttributes[{_lit(key)}]"


def _first(keys: tuple[str, ...]) -> str:
    """The first non-empty attribute of ``keys``, else NULL (``normalize._first``)."""
    branches = ", ".join(f"{_attr(k)} != '', {_attr(k)}" for k in keys)
    return f"multiIf({branches}, NULL)"


def _get(key: str) -> str:
    """``attrs.get(key)``: the value when the key is present (even empty), else NULL."""
    return f"if(mapContains(SpanAttributes, {_lit(key)}), {_attr(key)}, NULL)"


def _int(expr: str, ch_type: str = "Int64", low: int = -(2**63), high: int = 2**63) -> str:
    """``normalize._int``: int(float(text)), NULL when it does not parse or lies outside ``[low, high)``."""
    number = f"toFloat64OrNull(ifNull({expr}, ''))"
    inside = (
        f"isFinite(ifNull({number}, nan)) AND assumeNotNull({number}) >= {low} AND assumeNotNull({number}) < {high}"
    )
    return f"if({inside}, to{ch_type}(assumeNotNull({number})), NULL)"


def _count(expr: str) -> str:
    """``normalize._tokens``: a token count in ``[0, MAX_TOKENS)``, else NULL."""
    return _int(expr, "Int64", 0, N.MAX_TOKENS)


def _transform(key: str, table: dict[str, str]) -> str:
    sources = "[" + ", ".join(_lit(k) for k in table) + "]"
    targets = "[" + ", ".join(_lit(v) for v in table.values()) + "]"
    return f"transform({_attr(key)}, {sources}, {targets}, 'other')"


def span_type_sql() -> str:
    """``normalize.span_type`` as a ClickHouse expression over ``attrs`` and ``SpanName``."""
    branches = []
    for key, table in (
        ("langfuse.observation.type", N._LANGFUSE_TYPES),
        ("openinference.span.kind", N._OPENINFERENCE_KINDS),
        ("traceloop.span.kind", N._TRACELOOP_KINDS),
        (A.OPERATION_NAME, N._GENAI_OPERATIONS),
    ):
        branches.append(f"{_attr(key)} != '', {_transform(key, table)}")
    branches.append(f"{_first(N._TOOL_NAME_KEYS)} IS NOT NULL, 'tool'")
    branches.append(f"{_first(N._MODEL_KEYS)} IS NOT NULL, 'llm'")
    branches.append("mapContains(SpanAttributes, 'agent_name') OR SpanName = 'agent run', 'agent'")
    for prefix, kind in N._SPAN_NAME_PREFIXES:
        branches.append(f"startsWith(SpanName, {_lit(prefix)}), {_lit(kind)}")
    return "multiIf(" + ",\n        ".join(branches) + ",\n        'other')"


def error_class_sql(expr: str) -> str:
    """``normalize.error_class_for`` with the same patterns (RE2 accepts them as written)."""
    branches = ", ".join(
        f"match({expr}, {_lit('(?i)' + pattern.pattern)}), {_lit(cls)}"
        for pattern, cls in (
            (N._FATAL, "fatal"),
            (N._TRANSIENT, "transient"),
            (N._PERMANENT, "permanent"),
            (N._INVALID, "invalid_argument"),
        )
    )
    return f"multiIf({branches}, 'permanent')"


def _strip_prefix(prefix: str) -> str:
    return f"if(startsWith(SpanName, {_lit(prefix)}), substring(SpanName, {len(prefix.encode()) + 1}), SpanName)"


def _args_hash_of_text(expr: str) -> str:
    """``normalize.args_hash_of_text``: sha256 of the canonical JSON (object keys sorted at the top level)."""
    canonical = (
        f"multiIf(isValidJSON({expr}) AND JSONType({expr}) = 'Object', "
        f"concat('{{', arrayStringConcat(arrayMap(kv -> concat('\"', replaceAll(replaceAll(kv.1, '\\\\', '\\\\\\\\'), '\"', '\\\\\"'), '\":', kv.2), "
        f"arraySort(kv -> kv.1, JSONExtractKeysAndValuesRaw({expr}))), ','), '}}'), "
        f"isValidJSON({expr}), JSONExtractRaw({expr}), {expr})"
    )
    return f"substring(lower(hex(SHA256({canonical}))), 1, 16)"


CONTENT_KEYS_SQL = "[" + ", ".join(_lit(k) for k in sorted(N._CONTENT_KEYS)) + "]"
_IS_ERROR = f"(StatusCode = 'Error' OR {_attr('langfuse.observation.level')} = 'ERROR')"
_EXCEPTION_TYPE = "arrayFirst((a, n) -> n = 'exception' AND mapContains(a, 'exception.type'), `Events.Attributes`, `Events.Name`)['exception.type']"


def _usage(field: str) -> str:
    usage = _attr("langfuse.observation.usage_details")
    value = (
        f"if(JSONType({usage}, {_lit(field)}) = 'String', JSONExtractString({usage}, {_lit(field)}), "
        f"JSONExtractRaw({usage}, {_lit(field)}))"
    )
    return f"if(isValidJSON({usage}) AND JSONType({usage}) = 'Object', {_count(value)}, NULL)"


def _tokens(keys: tuple[str, ...], field: str) -> str:
    both_missing = f"{_first(N._INPUT_TOKEN_KEYS)} IS NULL AND {_first(N._OUTPUT_TOKEN_KEYS)} IS NULL"
    return f"if(loopsight_span_type = 'llm', if({both_missing}, {_usage(field)}, {_count(_first(keys))}), NULL)"


def typed_columns() -> list[tuple[str, str, str]]:
    """``(column, type, expression)`` of each typed agent column, in dependency order.

    They are added to the exporter's table as ``MATERIALIZED`` columns named
    ``loopsight_<column>``: computed once at insert (by whoever inserts: the contrib
    exporter or loopsight), stored compressed beside the exporter's columns, and ignored
    by the exporter's own INSERT, which names its columns.
    """
    tool_name = _first(N._TOOL_NAME_KEYS)
    agent_name = _first(N._AGENT_KEYS)
    raw_args = _first(N._TOOL_ARGS_KEYS)
    error_type = (
        f"if({_IS_ERROR}, multiIf({_attr(A.ERROR_TYPE)} != '', {_attr(A.ERROR_TYPE)}, {_EXCEPTION_TYPE} != '', {_EXCEPTION_TYPE}, "
        f"StatusMessage != '', StatusMessage, 'error'), NULL)"
    )
    lc = "LowCardinality(Nullable(String))"
    entity = _attr("traceloop.entity.name")
    return [
        ("span_type", "LowCardinality(String)", span_type_sql()),
        ("operation", lc, _get(A.OPERATION_NAME)),
        (
            "agent",
            lc,
            f"multiIf({agent_name} IS NOT NULL, {agent_name}, loopsight_span_type = 'agent', "
            f"if({entity} != '', {entity}, {_strip_prefix('invoke_agent ')}), NULL)",
        ),
        ("step", "Nullable(Int32)", _int(_get(A.STEP), "Int32", -(2**31), 2**31)),
        (
            "tool",
            lc,
            f"if(loopsight_span_type = 'tool', multiIf({tool_name} IS NOT NULL, {tool_name}, "
            f"{entity} != '', {entity}, {_strip_prefix('execute_tool ')}), NULL)",
        ),
        (
            "args_hash",
            "Nullable(String)",
            f"multiIf({_attr(A.TOOL_ARGS_HASH)} != '', {_attr(A.TOOL_ARGS_HASH)}, "
            f"loopsight_span_type = 'tool' AND {raw_args} IS NOT NULL, "
            f"{_args_hash_of_text(f'assumeNotNull({raw_args})')}, {_get(A.TOOL_ARGS_HASH)})",
        ),
        ("model", lc, f"if(loopsight_span_type = 'llm', {_first(N._MODEL_KEYS)}, NULL)"),
        ("error_type", lc, error_type),
        (
            "error_class",
            lc,
            f"multiIf({_attr(A.ERROR_CLASS)} != '', {_attr(A.ERROR_CLASS)}, "
            f"{_IS_ERROR} AND loopsight_error_type != '', {error_class_sql('assumeNotNull(loopsight_error_type)')}, NULL)",
        ),
        ("input_tokens", "Nullable(Int64)", _tokens(N._INPUT_TOKEN_KEYS, "input")),
        ("output_tokens", "Nullable(Int64)", _tokens(N._OUTPUT_TOKEN_KEYS, "output")),
        (
            "termination_reason",
            lc,
            f"if(loopsight_span_type = 'agent', if({_attr(A.TERMINATION_REASON)} != '', "
            f"{_attr(A.TERMINATION_REASON)}, if({_IS_ERROR}, 'error', 'completed')), NULL)",
        ),
        ("fallback", lc, _get(A.FALLBACK)),
        ("loop_kind", lc, _get(A.LOOP_KIND)),
        ("attempts", "Nullable(Int32)", _int(_get(A.TOOL_ATTEMPTS), "Int32", -(2**31), 2**31)),
        (
            "args_sketch",
            "Nullable(UInt64)",
            f"multiIf({_attr(ARGS_SKETCH_KEY)} != '', toUInt64OrNull({_attr(ARGS_SKETCH_KEY)}), "
            f"loopsight_span_type = 'tool' AND {raw_args} IS NOT NULL, "
            f"{sketch_sql(f'assumeNotNull({raw_args})')}, NULL)",
        ),
    ]


def typed_columns_modify_ddl(options: SchemaOptions, names: tuple[str, ...]) -> list[str]:
    """Bring an existing table's expressions of the typed columns ``names`` up to
    :func:`typed_columns` (for new inserts; stored rows keep what they were computed with)."""
    cluster = f" ON CLUSTER {options.cluster}" if options.cluster else ""
    columns = ",\n    ".join(
        f"MODIFY COLUMN loopsight_{name} {ch_type} MATERIALIZED {expr} CODEC(ZSTD(1))"
        for name, ch_type, expr in typed_columns()
        if name in names
    )
    return [f"ALTER TABLE {options.table}{cluster}\n    {columns}"]


def typed_columns_ddl(options: SchemaOptions) -> list[str]:
    """One ``ALTER TABLE`` adding every typed column as ``MATERIALIZED`` (one metadata change)."""
    cluster = f" ON CLUSTER {options.cluster}" if options.cluster else ""
    columns = ",\n    ".join(
        f"ADD COLUMN IF NOT EXISTS loopsight_{name} {ch_type} MATERIALIZED {expr} CODEC(ZSTD(1))"
        for name, ch_type, expr in typed_columns()
    )
    return [f"ALTER TABLE {options.table}{cluster}\n    {columns}"]


def spans_select(table: str = "otel_traces", capture_content: bool = False, where: str = "1") -> str:
    """The rows of the ``spans`` view: the DuckDB ``spans`` columns over ``otel_traces`` and its typed columns.

    ``run_id`` is the top-most ``invoke_agent`` ancestor (or the span itself), read from
    the run index (:mod:`loopsight.stores.clickhouse_run_index`); NULL until indexed.
    ``where`` (over ``TraceId``) restricts both sides, so a few traces read by key.
    """
    attrs = "attrs_raw" if capture_content else f"mapFilter((k, v) -> NOT has({CONTENT_KEYS_SQL}, k), attrs_raw)"
    materialized = ", ".join(f"loopsight_{name}" for name, _, _ in typed_columns())
    typed = ",\n    ".join(
        "coalesce(r.step, f.loopsight_step) AS step" if name == "step" else f"f.loopsight_{name} AS {name}"
        for name, _, _ in typed_columns()
    )
    return f"""SELECT
    toDateTime64(f.ts_ns, 6, 'UTC') AS Timestamp,
    f.TraceId AS TraceId, f.SpanId AS SpanId, f.ParentSpanId AS ParentSpanId, f.TraceState AS TraceState,
    f.SpanName AS SpanName, f.SpanKind AS SpanKind, f.ServiceName AS ServiceName,
    f.ResourceAttributes AS ResourceAttributes, f.ScopeName AS ScopeName, f.ScopeVersion AS ScopeVersion,
    {attrs} AS SpanAttributes,
    toInt64(f.duration_ns) AS Duration,
    if(f.loopsight_error_type IS NOT NULL, 'Error', f.StatusCode) AS StatusCode, f.StatusMessage AS StatusMessage,
    arrayMap(t -> toDateTime64(t, 6, 'UTC'), f.events_ts) AS `Events.Timestamp`,
    f.`Events.Name` AS `Events.Name`, f.`Events.Attributes` AS `Events.Attributes`,
    f.`Links.TraceId` AS `Links.TraceId`, f.`Links.SpanId` AS `Links.SpanId`,
    f.`Links.TraceState` AS `Links.TraceState`, f.`Links.Attributes` AS `Links.Attributes`,
    {typed},
    r.run_id AS run_id,
    toDateTime64(fromUnixTimestamp64Nano(toUnixTimestamp64Nano(f.ts_ns) + toInt64(f.duration_ns)), 6, 'UTC') AS end_time,
    end_time AS ingested_at
FROM (SELECT *, SpanAttributes AS attrs_raw, Timestamp AS ts_ns, Duration AS duration_ns, `Events.Timestamp` AS events_ts,
             {materialized}
      FROM {table} WHERE {where}) AS f
LEFT JOIN (SELECT TraceId, SpanId, run_id, step FROM loopsight_run_index FINAL WHERE {where}) AS r
       ON r.TraceId = f.TraceId AND r.SpanId = f.SpanId
SETTINGS join_use_nulls = 1"""


def spans_view_sql(table: str = "otel_traces", capture_content: bool = False) -> str:
    """The ``spans`` view (:func:`spans_select`)."""
    return f"CREATE OR REPLACE VIEW spans AS\n{spans_select(table, capture_content)}"


# The typed columns of every indexed span, without the attribute maps and links: what loops,
# stalls and burn read (``typed_spans``), so their CTEs re-read a narrow table, not the join.
WIDE_COLUMNS = (
    "TraceState",
    "ResourceAttributes",
    "ScopeName",
    "ScopeVersion",
    "SpanAttributes",
    "`Links.TraceId`",
    "`Links.SpanId`",
    "`Links.TraceState`",
    "`Links.Attributes`",
)


def typed_spans_insert(table: str, where: str) -> str:
    """``INSERT INTO loopsight_spans`` the ``spans`` rows of the traces ``where`` selects."""
    return (
        f"INSERT INTO loopsight_spans SELECT * EXCEPT ({', '.join(WIDE_COLUMNS)}), now64(6) AS indexed_at "
        f"FROM ({spans_select(table, where=where)})"
    )


def typed_spans_ddl(options: SchemaOptions) -> list[str]:
    """``loopsight_spans`` (ReplacingMergeTree, one row per span, newest indexing wins), filled from what is indexed, and its view."""
    return [
        f"""CREATE TABLE IF NOT EXISTS loopsight_spans
ENGINE = ReplacingMergeTree(indexed_at) ORDER BY (TraceId, SpanId)
EMPTY AS SELECT * EXCEPT ({", ".join(WIDE_COLUMNS)}), now64(6) AS indexed_at FROM ({spans_select(options.table)})""",
        typed_spans_insert(options.table, "TraceId IN (SELECT TraceId FROM loopsight_run_index)"),
        "CREATE OR REPLACE VIEW typed_spans AS SELECT * EXCEPT (indexed_at) FROM loopsight_spans FINAL",
    ]


ALERT_TABLES = (
    """CREATE TABLE IF NOT EXISTS alert_rules (
    name String,
    definition String,
    active Bool DEFAULT true,
    state LowCardinality(String) DEFAULT 'ok',
    state_since Nullable(DateTime64(6)),
    pending_since Nullable(DateTime64(6)),
    value Nullable(Float64),
    baseline Nullable(Float64),
    samples Nullable(Int64),
    examples Array(String),
    last_evaluated_at Nullable(DateTime64(6)),
    last_notified_at Nullable(DateTime64(6)),
    notified_firing Bool DEFAULT false,
    updated_at DateTime64(6) DEFAULT now64(6)
) ENGINE = ReplacingMergeTree(updated_at)
ORDER BY name""",
    """CREATE TABLE IF NOT EXISTS alert_events (
    id UInt64 DEFAULT generateSnowflakeID(),
    rule String,
    occurred_at DateTime64(6),
    from_state LowCardinality(String),
    to_state LowCardinality(String),
    value Nullable(Float64),
    threshold Nullable(Float64),
    baseline Nullable(Float64),
    samples Nullable(Int64),
    examples Array(String),
    notify_status LowCardinality(String) DEFAULT 'none',
    notify_error Nullable(String)
) ENGINE = MergeTree
ORDER BY (rule, occurred_at, id)""",
    """CREATE TABLE IF NOT EXISTS alert_samples (
    rule String,
    sampled_at DateTime64(6),
    value Nullable(Float64),
    samples Int64
) ENGINE = MergeTree
ORDER BY (rule, sampled_at)""",
)


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


RUN_LOOPS_TABLE = """CREATE TABLE IF NOT EXISTS loopsight_run_loops (
    trace_id String,
    run_id String,
    agent Nullable(String),
    service String,
    started_at DateTime64(6, 'UTC'),
    tool Nullable(String),
    kind LowCardinality(String),
    args_hash Nullable(String),
    count Int64,
    first_step Nullable(Int64),
    first_at DateTime64(6, 'UTC'),
    wasted_tokens Int64,
    derived_at DateTime64(6)
) ENGINE = MergeTree
ORDER BY (trace_id, derived_at)"""


RUN_STEPS_TABLE = """CREATE TABLE IF NOT EXISTS loopsight_run_steps (
    trace_id String,
    run_id String,
    agent Nullable(String),
    service String,
    started_at DateTime64(6, 'UTC'),
    step Int64,
    input_tokens Nullable(Int64),
    derived_at DateTime64(6)
) ENGINE = MergeTree
ORDER BY (trace_id, derived_at)"""


RUN_MEMBERS_TABLE = """CREATE TABLE IF NOT EXISTS loopsight_run_members (
    trace_id String,
    run_id String,
    span_id String,
    span_type LowCardinality(String),
    ts DateTime64(6, 'UTC'),
    end_time DateTime64(6, 'UTC'),
    duration_ms Float64,
    agent Nullable(String),
    service String,
    started_at DateTime64(6, 'UTC'),
    run_end DateTime64(6, 'UTC'),
    backoff_ms Float64,
    what Nullable(String),
    covered_until Nullable(DateTime64(6, 'UTC')),
    nested Bool,
    derived_at DateTime64(6)
) ENGINE = MergeTree
ORDER BY (trace_id, derived_at)"""


@dataclass(frozen=True)
class Migration:
    """One ordered step: its id, the statements it runs, and an optional backfill run after them."""

    version: str
    statements: Callable[[SchemaOptions], list[str]]
    backfill: Callable[[ClickHouseConnection], object] | None = None


def _derive_all(con: ClickHouseConnection) -> None:
    from loopsight.stores.clickhouse_run_index import derive_runs

    derive_runs(con, [row[0] for row in con.execute("SELECT DISTINCT TraceId FROM loopsight_run_index").fetchall()])


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "0001_otel_traces",
        lambda o: [
            o.render(EXPORTER_TRACES_TABLE),
            o.render(EXPORTER_TRACE_ID_TS_TABLE),
            o.render(EXPORTER_TRACE_ID_TS_VIEW),
        ],
    ),
    Migration("0002_typed_columns", typed_columns_ddl),
    Migration("0003_spans_view", lambda o: [INDEX_TABLE, STATE_TABLE, spans_view_sql(o.table)]),
    Migration("0004_alerts", lambda o: list(ALERT_TABLES)),
    Migration("0005_run_index", lambda o: [INDEX_TABLE, STATE_TABLE]),
    Migration("0006_span_type_pydantic_run", lambda o: typed_columns_modify_ddl(o, ("span_type",))),
    Migration("0007_alert_deliveries", lambda o: list(ALERT_STATE_0007)),
    # adds loopsight_args_sketch (the other typed columns exist: ADD COLUMN IF NOT EXISTS)
    Migration("0008_args_sketch", typed_columns_ddl),
    Migration("0009_typed_spans", typed_spans_ddl),
    Migration("0010_run_facts", lambda o: [RUN_LOOPS_TABLE, RUN_STEPS_TABLE, RUN_MEMBERS_TABLE], _derive_all),
    # token counts outside [0, 2^32) and steps or attempts outside Int32 read as NULL, as at ingest
    Migration(
        "0011_bounded_numbers",
        lambda o: typed_columns_modify_ddl(o, ("step", "input_tokens", "output_tokens", "attempts")),
    ),
)

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


def upgrade(con: ClickHouseConnection, options: SchemaOptions | None = None) -> list[str]:
    """Apply the missing migrations in order; returns the ids applied now.

    The ``spans`` view is re-created (``CREATE OR REPLACE``) by every upgrade so it always
    matches the installed loopsight.
    """
    options = options or SchemaOptions(table=con.url.table)
    done = set(applied(con))
    now = []
    for migration in MIGRATIONS:
        if migration.version in done:
            continue
        for statement in migration.statements(options):
            con.command(statement)
        if migration.backfill is not None:
            migration.backfill(con)
        con.execute("INSERT INTO loopsight_schema_migrations (version) VALUES ({v:String})", {"v": migration.version})
        now.append(migration.version)
    con.command(spans_view_sql(options.table))
    return now
