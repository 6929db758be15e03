"""Rows as the OpenTelemetry Collector's ClickHouse exporter inserts them into ``otel_traces``.

The contrib ``clickhouseexporter`` writes every attribute as a string, drops nothing, and writes
``Events``/``Links`` as the Nested columns' parallel arrays. Tests and benchmarks fill a
ClickHouse store through this the way a deployment's exporter does; the store reads such rows
back with :func:`loopsight.ingest.exporter.otel_traces_rows`. Test tooling, not part of the
library: loopsight never creates or writes ``otel_traces`` (:func:`create_otel_traces` makes it
as the exporter does).

Example:
    >>> from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    >>> request_to_otel_traces(ExportTraceServiceRequest()).num_rows
    0
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from loopsight.ingest.batch import SCHEMA
from loopsight.ingest.normalize import SPAN_KINDS, STATUS_CODES, any_value_to_str

TS = pa.timestamp("ns")

# The exporter's traces_table.sql (exporter/clickhouseexporter/internal/sql_templates), as its Go
# code renders it with no cluster, the default engine and no TTL.
OTEL_TRACES_DDL = """CREATE TABLE IF NOT EXISTS {table} (
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
) ENGINE = MergeTree()
PARTITION BY toDate(Timestamp)
ORDER BY (ServiceName, SpanName, toDateTime(Timestamp))
SETTINGS index_granularity=8192, ttl_only_drop_parts = 1"""


def create_otel_traces(con: Any, table: str = "otel_traces") -> None:
    """Create ``table`` as the exporter does when it starts (``create_schema: true``)."""
    con.command(OTEL_TRACES_DDL.format(table=table))


def _exported(field: pa.Field) -> pa.DataType:
    """A stored column's type as the exporter's: times in nanoseconds, an unsigned duration."""
    return TS if pa.types.is_timestamp(field.type) else pa.uint64() if field.name == "Duration" else field.type


# The columns up to StatusMessage as stored; Events and Links as the Nested columns' parallel arrays.
OTEL_TRACES_SCHEMA = pa.schema(
    [(f.name, _exported(f)) for f in list(SCHEMA)[: SCHEMA.get_field_index("Events")]]
    + [
        (f"{nested}.{sub.name}", pa.list_(_exported(sub)))
        for nested in ("Events", "Links")
        for sub in SCHEMA.field(nested).type.value_type
    ]
)


def _attrs(kvs: object) -> list[tuple[str, str]]:
    return [(kv.key, any_value_to_str(kv.value)) for kv in kvs]  # type: ignore[attr-defined]


def request_to_otel_traces(request: ExportTraceServiceRequest) -> pa.Table:
    """The rows the exporter would insert for ``request`` (attributes as a string map)."""
    columns: dict[str, list[object]] = {name: [] for name in OTEL_TRACES_SCHEMA.names}
    for resource_spans in request.resource_spans:
        resource = _attrs(resource_spans.resource.attributes)
        service = next((v for k, v in resource if k == "service.name"), "")
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope
            for span in scope_spans.spans:
                columns["Timestamp"].append(span.start_time_unix_nano)
                columns["TraceId"].append(span.trace_id.hex())
                columns["SpanId"].append(span.span_id.hex())
                columns["ParentSpanId"].append(span.parent_span_id.hex())
                columns["TraceState"].append(span.trace_state)
                columns["SpanName"].append(span.name)
                columns["SpanKind"].append(SPAN_KINDS[span.kind] if 0 <= span.kind < len(SPAN_KINDS) else "Unspecified")
                columns["ServiceName"].append(service)
                columns["ResourceAttributes"].append(resource)
                columns["ScopeName"].append(scope.name)
                columns["ScopeVersion"].append(scope.version)
                columns["SpanAttributes"].append(_attrs(span.attributes))
                columns["Duration"].append(max(span.end_time_unix_nano - span.start_time_unix_nano, 0))
                code = span.status.code
                columns["StatusCode"].append(STATUS_CODES[code] if 0 <= code < len(STATUS_CODES) else "Unset")
                columns["StatusMessage"].append(span.status.message)
                columns["Events.Timestamp"].append([e.time_unix_nano for e in span.events])
                columns["Events.Name"].append([e.name for e in span.events])
                columns["Events.Attributes"].append([_attrs(e.attributes) for e in span.events])
                columns["Links.TraceId"].append([link.trace_id.hex() for link in span.links])
                columns["Links.SpanId"].append([link.span_id.hex() for link in span.links])
                columns["Links.TraceState"].append([link.trace_state for link in span.links])
                columns["Links.Attributes"].append([_attrs(link.attributes) for link in span.links])
    return pa.Table.from_arrays(
        [pa.array(columns[f.name], type=f.type) for f in OTEL_TRACES_SCHEMA], schema=OTEL_TRACES_SCHEMA
    )
