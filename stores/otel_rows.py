"""Arrow tables shaped like the exporter's ``otel_traces`` rows.

Two sources:

- :func:`request_to_otel_traces`: an OTLP request, written exactly as the OpenTelemetry
  Collector's ``clickhouseexporter`` writes it (every attribute as a string, nothing
  dropped, ``Events``/``Links`` as parallel arrays). Tests and benchmarks use it to fill a
  ClickHouse store the way a production deployment fills it.
- :func:`batch_to_otel_traces`: a loopsight collector batch (``collector.batch.SCHEMA``),
  for the collector's direct ClickHouse writer. The typed columns are dropped (the
  ``spans`` view recomputes them from the attributes), except the args hash and sketch
  loopsight derived from raw arguments it then dropped: those are kept as
  ``loopsight.tool.args_hash`` and ``loopsight.tool.args_sketch`` in ``SpanAttributes``.

Example:
    >>> request_to_otel_traces(ExportTraceServiceRequest()).num_rows
    0
"""

from __future__ import annotations

import pyarrow as pa
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from loopsight import attributes as A
from loopsight.ingest.normalize import SPAN_KINDS, STATUS_CODES, any_value_to_str

ATTR_MAP = pa.map_(pa.string(), pa.string())
TS = pa.timestamp("ns")

OTEL_TRACES_SCHEMA = pa.schema(
    [
        ("Timestamp", TS),
        ("TraceId", pa.string()),
        ("SpanId", pa.string()),
        ("ParentSpanId", pa.string()),
        ("TraceState", pa.string()),
        ("SpanName", pa.string()),
        ("SpanKind", pa.string()),
        ("ServiceName", pa.string()),
        ("ResourceAttributes", ATTR_MAP),
        ("ScopeName", pa.string()),
        ("ScopeVersion", pa.string()),
        ("SpanAttributes", ATTR_MAP),
        ("Duration", pa.uint64()),
        ("StatusCode", pa.string()),
        ("StatusMessage", pa.string()),
        ("Events.Timestamp", pa.list_(TS)),
        ("Events.Name", pa.list_(pa.string())),
        ("Events.Attributes", pa.list_(ATTR_MAP)),
        ("Links.TraceId", pa.list_(pa.string())),
        ("Links.SpanId", pa.list_(pa.string())),
        ("Links.TraceState", pa.list_(pa.string())),
        ("Links.Attributes", pa.list_(ATTR_MAP)),
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


def _split(column: pa.ChunkedArray, fields: list[str]) -> dict[str, pa.Array]:
    """A list<struct> column to one list column per struct field (ClickHouse Nested)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if isinstance(array, pa.ChunkedArray):  # an empty table has no chunk to combine
        array = pa.array([], type=column.type)
    array = array.fill_null([]) if array.null_count else array
    offsets = array.offsets
    values = array.flatten()
    return {name: pa.ListArray.from_arrays(offsets, values.field(name)) for name in fields}


ARGS_SKETCH_KEY = "loopsight.tool.args_sketch"
"""Where the writer keeps the args sketch it computed from raw arguments it then dropped (decimal text)."""


def _with_args_hash(table: pa.Table) -> pa.Array:
    """``SpanAttributes``, plus the args hash and sketch where loopsight computed them and the map lacks them."""
    attrs = table.column("SpanAttributes").combine_chunks()
    hashes = table.column("args_hash").combine_chunks()
    sketches = table.column("args_sketch").combine_chunks()
    if (not len(hashes) or hashes.null_count == len(hashes)) and sketches.null_count == len(sketches):
        return attrs
    maps = attrs.to_pylist()
    changed = False
    for i, (value, digest, sketch) in enumerate(zip(maps, hashes.to_pylist(), sketches.to_pylist(), strict=False)):
        if digest is None and sketch is None:
            continue
        pairs = value or []
        keys = {k for k, _ in pairs}
        extra = []
        if digest is not None and A.TOOL_ARGS_HASH not in keys:
            extra.append((A.TOOL_ARGS_HASH, digest))
        if sketch is not None and ARGS_SKETCH_KEY not in keys:
            extra.append((ARGS_SKETCH_KEY, str(sketch)))
        if extra:
            maps[i] = [*pairs, *extra]
            changed = True
    return pa.array(maps, type=ATTR_MAP) if changed else attrs


def batch_to_otel_traces(table: pa.Table) -> pa.Table:
    """A collector batch (``collector.batch.SCHEMA``) as ``otel_traces`` columns."""
    events = _split(table.column("Events"), ["Timestamp", "Name", "Attributes"])
    links = _split(table.column("Links"), ["TraceId", "SpanId", "TraceState", "Attributes"])
    arrays = {
        "Timestamp": table.column("Timestamp").cast(TS),
        "TraceId": table.column("TraceId"),
        "SpanId": table.column("SpanId"),
        "ParentSpanId": table.column("ParentSpanId"),
        "TraceState": table.column("TraceState"),
        "SpanName": table.column("SpanName"),
        "SpanKind": table.column("SpanKind"),
        "ServiceName": table.column("ServiceName"),
        "ResourceAttributes": table.column("ResourceAttributes"),
        "ScopeName": table.column("ScopeName"),
        "ScopeVersion": table.column("ScopeVersion"),
        "SpanAttributes": _with_args_hash(table),
        "Duration": table.column("Duration").cast(pa.uint64()),
        "StatusCode": table.column("StatusCode"),
        "StatusMessage": table.column("StatusMessage"),
        "Events.Timestamp": events["Timestamp"].cast(pa.list_(TS)),
        "Events.Name": events["Name"],
        "Events.Attributes": events["Attributes"],
        "Links.TraceId": links["TraceId"],
        "Links.SpanId": links["SpanId"],
        "Links.TraceState": links["TraceState"],
        "Links.Attributes": links["Attributes"],
    }
    return pa.Table.from_arrays(
        [arrays[f.name] if arrays[f.name].type == f.type else arrays[f.name].cast(f.type) for f in OTEL_TRACES_SCHEMA],
        schema=OTEL_TRACES_SCHEMA,
    )
