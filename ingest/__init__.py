"""Ingest: OTLP requests decoded, every span normalized into the one agent model, as Arrow.

Pure functions, no I/O and no store: :func:`decode_request` (protobuf or JSON, gzip or
deflate, size caps), :func:`prepare` (a request to one Arrow batch in :data:`SCHEMA`, with
the reasons spans were rejected), :func:`normalize_span` (one OTLP span to one row).

Example:
    >>> from loopsight.ingest import prepare
    >>> from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    >>> prepare(ExportTraceServiceRequest()).accepted
    0
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loopsight.ingest.batch import SCHEMA, to_arrow
    from loopsight.ingest.normalize import Limits, SpanRow, normalize_span
    from loopsight.ingest.otlp import BadRequest, TooLarge, UnsupportedMediaType, decode_request
    from loopsight.ingest.pipeline import Prepared, prepare, spans_to_request

# Loaded when first asked for: the argument rules (``loopsight.ingest.features``) need only the
# standard library and serve the base install's reference loop (``loopsight.react``), while the
# rest needs the collector extra (pyarrow, the OTLP protos).
_HOMES = {
    "SCHEMA": "batch",
    "to_arrow": "batch",
    "Limits": "normalize",
    "SpanRow": "normalize",
    "normalize_span": "normalize",
    "BadRequest": "otlp",
    "TooLarge": "otlp",
    "UnsupportedMediaType": "otlp",
    "decode_request": "otlp",
    "Prepared": "pipeline",
    "prepare": "pipeline",
    "spans_to_request": "pipeline",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'loopsight.ingest' has no attribute {name!r}")
    return getattr(importlib.import_module(f"loopsight.ingest.{home}"), name)


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
