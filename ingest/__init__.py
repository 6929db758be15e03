"""Ingest: OTLP requests decoded, every span normalized into the one agent model, as Arrow.

Pure functions, no I/O and no store: :func:`decode_request` (protobuf or JSON, gzip or
deflate, size caps), :func:`prepare` (a request to one Arrow batch in :data:`SCHEMA`, with
the reasons spans were rejected), :func:`normalize_span` (one OTLP span to one row).

Example:
    >>> from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    >>> prepare(ExportTraceServiceRequest()).accepted
    0
"""

from __future__ import annotations

from loopsight.ingest.batch import SCHEMA, to_arrow
from loopsight.ingest.normalize import Limits, SpanRow, normalize_span
from loopsight.ingest.otlp import BadRequest, TooLarge, UnsupportedMediaType, decode_request
from loopsight.ingest.pipeline import Prepared, prepare, spans_to_request

__all__ = [
    "SCHEMA",
    "BadRequest",
    "Limits",
    "Prepared",
    "SpanRow",
    "TooLarge",
    "UnsupportedMediaType",
    "decode_request",
    "normalize_span",
    "prepare",
    "spans_to_request",
    "to_arrow",
]
