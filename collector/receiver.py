"""What both OTLP receivers (HTTP and gRPC) do with a decoded export request.

Normalize (CPU, no I/O), queue for the writer, and once committed count it and hand it
to the forwarder. Both transports share one in-flight budget (:attr:`Receiver.admission`).
The transports only translate the outcome into their status codes.

Example:
    >>> receiver = Receiver(store, Limits(), Metrics())  # doctest: +SKIP
    >>> prepared, future = receiver.accept(request, "http")  # doctest: +SKIP
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from loopsight.collector.admission import Admission
from loopsight.collector.metrics import Metrics
from loopsight.ingest.normalize import Limits
from loopsight.ingest.pipeline import Prepared, prepare
from loopsight.stores import QueueFull, StoreError


class Receiver:
    """Shared ingest path: :meth:`accept` then, after the commit, :meth:`committed`."""

    def __init__(
        self, store: Any, limits: Limits, metrics: Metrics, forwarder: Any = None, admission: Admission | None = None
    ) -> None:
        self.store = store
        self.admission = admission if admission is not None else Admission()
        self.limits = limits
        self.metrics = metrics
        self.forwarder = forwarder

    def accept(self, request: ExportTraceServiceRequest, transport: str) -> tuple[Prepared, Future[int] | None]:
        """Normalize and queue; raises :class:`QueueFull` (answer 503 / UNAVAILABLE)."""
        prepared = prepare(request, self.limits)
        self.metrics.spans_received(transport, prepared.accepted + prepared.rejected_count)
        for reason, count in prepared.rejected.items():
            self.metrics.spans_rejected(reason, count)
        if prepared.table is None:
            return prepared, None
        try:
            future = self.store.submit(prepared.table)
        except QueueFull:
            self.metrics.spans_rejected("queue_full", prepared.accepted)
            self.metrics.request(transport, "queue_full")
            raise
        return prepared, future

    def committed(
        self, prepared: Prepared, transport: str, request: ExportTraceServiceRequest | None, body: bytes | None = None
    ) -> None:
        """Count the acknowledged spans and forward the request upstream (never blocks)."""
        self.metrics.spans_accepted(transport, prepared.accepted)
        self.metrics.request(transport, "partial" if prepared.rejected else "ok")
        if self.forwarder is not None and prepared.accepted:
            self.forwarder.offer(
                body if body is not None else request.SerializeToString() if request is not None else b""
            )

    def failed(self, prepared: Prepared, transport: str, exc: StoreError) -> None:
        """The commit failed: nothing was stored, the client should retry."""
        self.metrics.spans_rejected("store_error", prepared.accepted)
        self.metrics.request(transport, "store_error")
