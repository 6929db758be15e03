"""Spans as the OpenTelemetry Collector's ClickHouse exporter stores them (``otel_traces`` rows).

Both ways: :func:`request_to_otel_traces` writes an OTLP request exactly as the contrib
``clickhouseexporter`` does (every attribute as a string, nothing dropped, ``Events``/``Links``
as parallel arrays: tests and benchmarks fill a ClickHouse store the way a deployment does), and
:func:`otel_traces_rows` reads such rows back into the stored model — the same rules as for an
OTLP span (:func:`loopsight.ingest.normalize.agent_row`), so exporter-written and
collector-written spans are one model. Older exporters write ``STATUS_CODE_ERROR`` and
``SPAN_KIND_INTERNAL``; both spellings are read.

Example:
    >>> from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    >>> request_to_otel_traces(ExportTraceServiceRequest()).num_rows
    0
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from loopsight.ingest.batch import SCHEMA
from loopsight.ingest.normalize import (
    MAX_KEY_LENGTH,
    MAX_NANOS,
    SPAN_KINDS,
    STATUS_CODES,
    CallBatch,
    Limits,
    SpanRow,
    agent_row,
    any_value_to_str,
    read_or_reason,
    truncated,
)

TS = pa.timestamp("ns")


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
    """The rows the exporter would insert for ``request`` (attributes as a string map).

    Example:
        >>> from loopsight.ingest.pipeline import spans_to_request  # doctest: +SKIP
        >>> request_to_otel_traces(spans_to_request(spans)).column("SpanKind")  # doctest: +SKIP
    """
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


_STATUS = {"STATUS_CODE_UNSET": "Unset", "STATUS_CODE_OK": "Ok", "STATUS_CODE_ERROR": "Error"}
_KIND = {f"SPAN_KIND_{name.upper()}": name for name in SPAN_KINDS}


def _limited(pairs: Any, limits: Limits) -> dict[str, str]:
    """An exporter attribute map (pairs or a dict) within the ingest limits, as OTLP attributes are kept."""
    items = pairs.items() if isinstance(pairs, Mapping) else (pairs or ())
    out: dict[str, str] = {}
    cap = limits.max_attribute_length
    for key, value in items:
        if len(out) >= limits.max_attributes:
            break
        out[truncated(key, MAX_KEY_LENGTH)] = truncated(value if isinstance(value, str) else str(value), cap)
    return out


def _nanos(value: Any) -> int:
    """An exporter timestamp (Arrow gives ints or datetimes) in Unix nanoseconds."""
    if isinstance(value, int):
        return min(value, MAX_NANOS)
    return int(value.timestamp() * 1_000_000) * 1000 if value is not None else 0


def otel_traces_rows(table: pa.Table, limits: Limits | None = None) -> Iterator[SpanRow]:
    """The stored rows of ``otel_traces`` rows (an Arrow table with the exporter's columns).

    The tool calls' args hashes and argument features are computed for the whole table at once
    (:class:`loopsight.ingest.normalize.CallBatch`, as :func:`loopsight.ingest.otlp.iter_rows`
    does per request), so the rows come when all are made."""
    limits = limits or Limits()
    batch = CallBatch()
    out: list[SpanRow] = []
    cap = limits.max_attribute_length
    timestamps = table.column("Timestamp").cast(pa.int64()).to_pylist()
    columns = {name: table.column(name).to_pylist() for name in table.column_names if name != "Timestamp"}
    for i, start_ns in enumerate(timestamps):

        def col(name: str, default: Any = None, i: int = i) -> Any:
            values = columns.get(name)
            return values[i] if values is not None else default

        raw_attrs = dict(col("SpanAttributes") or ())
        events = [
            (_nanos(at), truncated(name or "", cap), _limited(attrs, limits))
            for at, name, attrs in list(
                zip(
                    col("Events.Timestamp", []) or [],
                    col("Events.Name", []) or [],
                    col("Events.Attributes", []) or [],
                    strict=False,
                )
            )[: limits.max_events]
        ]
        links = [
            (trace_id or "", span_id or "", truncated(state or "", cap), _limited(attrs, limits))
            for trace_id, span_id, state, attrs in list(
                zip(
                    col("Links.TraceId", []) or [],
                    col("Links.SpanId", []) or [],
                    col("Links.TraceState", []) or [],
                    col("Links.Attributes", []) or [],
                    strict=False,
                )
            )[: limits.max_events]
        ]
        status = col("StatusCode") or "Unset"
        kind = col("SpanKind") or "Unspecified"
        start = min(start_ns or 0, MAX_NANOS)
        batch.position = len(out)
        row = read_or_reason(
            batch,
            agent_row,
            col("TraceId"),
            col("SpanId"),
            col("ParentSpanId") or "",
            start,
            start + int(col("Duration") or 0),
            truncated(col("TraceState") or "", cap),
            truncated(col("SpanName") or "", cap),
            _KIND.get(kind, kind if kind in SPAN_KINDS else "Unspecified"),
            _STATUS.get(status, status if status in STATUS_CODES else "Unset"),
            col("StatusMessage") or "",
            _limited(raw_attrs, limits),
            _limited(col("ResourceAttributes") or (), limits),
            truncated(col("ScopeName") or "", cap),
            truncated(col("ScopeVersion") or "", cap),
            events,
            links,
            limits,
            raw_attrs,
            batch,
        )
        if not isinstance(row, str):  # a row the rules fail on is left out (logged): the import goes on
            out.append(row)
    batch.fill(out)
    return iter(out)
