"""Spans as the OpenTelemetry Collector's ClickHouse exporter stores them (``otel_traces`` rows), read.

The contrib ``clickhouseexporter`` writes every attribute as a string, drops nothing, and writes
``Events``/``Links`` as the Nested columns' parallel arrays. :func:`otel_traces_rows` reads such
rows into the stored model by the same rules as an OTLP span
(:func:`loopsight.ingest.normalize.agent_row`), so exporter-written and collector-written spans
are one model. Older exporters write ``STATUS_CODE_ERROR`` and ``SPAN_KIND_INTERNAL``; both
spellings are read.

Example:
    >>> import pyarrow as pa
    >>> list(otel_traces_rows(pa.table({"Timestamp": pa.array([], pa.int64())})))
    []
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from loopsight.ingest.normalize import (
    MAX_KEY_LENGTH,
    MAX_NANOS,
    SPAN_KINDS,
    STATUS_CODES,
    CallBatch,
    Limits,
    SpanRow,
    agent_row,
    read_or_reason,
    truncated,
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
    """An exporter timestamp (Arrow gives ints or datetimes) in Unix nanoseconds, to the nanosecond
    (``timestamp() * 1e9`` of a pandas Timestamp came out a microsecond late).

    Example:
        >>> import pandas as pd
        >>> _nanos(pd.Timestamp(1796460688055964885, unit="ns"))
        1796460688055964885
        >>> from datetime import datetime, timezone
        >>> _nanos(datetime(2026, 12, 5, 1, 2, 3, 55964, tzinfo=timezone.utc)) % 10**9
        55964000
    """
    if value is None or isinstance(value, int):
        return min(value or 0, MAX_NANOS)
    nanos = getattr(value, "value", None)  # a pandas Timestamp keeps its nanoseconds (a float of them rounds)
    return int(nanos) if nanos is not None else round(value.timestamp() * 1_000_000) * 1000


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
            (*(truncated(v or "", cap) for v in (trace_id, span_id, state)), _limited(attrs, limits))
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
