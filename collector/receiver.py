"""What both OTLP receivers (HTTP and gRPC) do with a decoded export request.

Normalize (CPU, no I/O), queue for the writer, and once committed count it and hand it
to the forwarder: :meth:`Receiver.ingest` (blocking, gRPC) or :meth:`Receiver.accept` then
:meth:`Receiver.settle` around an awaited commit (HTTP). Both transports share one in-flight
budget (:attr:`Receiver.admission`) and only translate the :class:`Outcome` into their status codes.

Example:
    >>> outcome = Receiver(store, Limits(), Metrics()).ingest(request, "grpc", body)  # doctest: +SKIP
    >>> outcome.error, outcome.rejected  # doctest: +SKIP
    (None, 0)
"""

from __future__ import annotations

from concurrent import futures
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from loopsight.collector.admission import Admission
from loopsight.collector.metrics import Metrics
from loopsight.ingest.normalize import Limits
from loopsight.ingest.pipeline import Prepared, prepare
from loopsight.stores import QueueFull, StoreError


@dataclass(frozen=True)
class Outcome:
    """What became of one export request: the spans rejected, and why the rest could not be stored."""

    prepared: Prepared
    error: str | None = None
    """Set when nothing was stored (answer 503 / UNAVAILABLE: the exporter retries)."""

    @property
    def rejected(self) -> int:
        return self.prepared.rejected_count

    @property
    def message(self) -> str:
        return self.prepared.rejection_message()


class Receiver:
    """The one ingest path of both transports: :meth:`ingest`, or :meth:`accept` + :meth:`settle`."""

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

    def ingest(self, request: ExportTraceServiceRequest, transport: str, body: bytes, timeout: float) -> Outcome:
        """Accept, wait for the commit (at most ``timeout`` s) and settle; raises :class:`QueueFull`.

        While it waits only the Arrow batch is held: pass the request without keeping a reference
        (``ingest(parsed.pop(), ...)``) and it is freed once accepted; ``body`` is what is forwarded."""
        prepared, future = self.accept(request, transport)
        del request
        if future is None:
            return self.settle(prepared, transport, None, body)
        try:
            future.result(timeout=timeout)
        except (StoreError, futures.TimeoutError) as exc:
            return self.settle(prepared, transport, exc, body)
        return self.settle(prepared, transport, None, body)

    def settle(
        self,
        prepared: Prepared,
        transport: str,
        error: BaseException | None,
        body: bytes | None,
        via: str | None = None,
    ) -> Outcome:
        """Count the commit's outcome and forward what was stored (``via``: the request's ``Via``
        header); the :class:`Outcome` to answer with."""
        if error is not None:
            self.failed(prepared, transport, error)
            return Outcome(prepared, f"could not store spans: {error}")
        self.committed(prepared, transport, None, body, via)
        return Outcome(prepared)

    def committed(
        self,
        prepared: Prepared,
        transport: str,
        request: ExportTraceServiceRequest | None,
        body: bytes | None = None,
        via: str | None = None,
    ) -> None:
        """Count the acknowledged spans and forward the request upstream (never blocks), unless it
        came round a loop of forwarding collectors (``via``)."""
        self.metrics.spans_accepted(transport, prepared.accepted)
        self.metrics.request(transport, "partial" if prepared.rejected else "ok")
        if self.forwarder is not None and prepared.accepted and not self.forwarder.came_round(via):
            self.forwarder.offer(
                body if body is not None else request.SerializeToString() if request is not None else b"", via
            )

    def failed(self, prepared: Prepared, transport: str, exc: BaseException) -> None:
        """The commit failed: nothing was stored, the client should retry."""
        self.metrics.spans_rejected("store_error", prepared.accepted)
        self.metrics.request(transport, "store_error")
