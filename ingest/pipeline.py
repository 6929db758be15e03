"""OTLP request -> normalized Arrow batch (no I/O): what every path into a store goes through.

The HTTP and gRPC receivers, ``loopsight ingest`` and test fixtures all call :func:`prepare`;
``loopsight.stores.ingest_request`` adds the submit and the wait for the commit.

Example:
    >>> from opentelemetry.sdk.trace import TracerProvider
    >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    >>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    >>> exporter = InMemorySpanExporter()
    >>> provider = TracerProvider()
    >>> provider.add_span_processor(SimpleSpanProcessor(exporter))
    >>> with provider.get_tracer("doc").start_as_current_span("execute_tool search"):
    ...     pass
    >>> request = spans_to_request(exporter.get_finished_spans())
    >>> prepare(request).accepted
    1
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan

from loopsight.ingest.batch import to_arrow
from loopsight.ingest.normalize import Limits
from loopsight.ingest.otlp import iter_rows


@dataclass
class Prepared:
    """A decoded request ready for the writer: the accepted rows and why others were rejected."""

    table: pa.Table | None
    rejected: Counter[str] = field(default_factory=Counter)

    @property
    def accepted(self) -> int:
        return self.table.num_rows if self.table is not None else 0

    @property
    def rejected_count(self) -> int:
        return sum(self.rejected.values())

    def rejection_message(self) -> str:
        """``"2 span(s) rejected: invalid trace_id or span_id length"`` or ``""``."""
        if not self.rejected:
            return ""
        reasons = "; ".join(f"{reason} ({n})" for reason, n in sorted(self.rejected.items()))
        return f"{self.rejected_count} span(s) rejected: {reasons}"


def prepare(request: ExportTraceServiceRequest, limits: Limits | None = None) -> Prepared:
    """Normalize every span of ``request`` into one Arrow table (no I/O)."""
    rows = []
    rejected: Counter[str] = Counter()
    for item in iter_rows(request, limits or Limits()):
        if isinstance(item, str):
            rejected[item] += 1
        else:
            rows.append(item)
    return Prepared(to_arrow(rows) if rows else None, rejected)


def spans_to_request(spans: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
    """OTel SDK finished spans -> the OTLP request an exporter would send."""
    return encode_spans(spans)
