"""Admission control: a bounded budget of export requests, and of the memory they hold, in flight.

A request holds its share from before its body is read until its answer is sent (decode,
normalize, write queue, commit). The share is in bytes of memory: :data:`EXPANSION` times the
body, because an OTLP protobuf body of N bytes is held next to its decoded protobuf (about 3.4 N)
and its Arrow table (about 2.1 N) while the request waits for its commit (measured on
``otlp_load`` requests). It is charged from ``Content-Length`` before the body is read, and
re-charged with :meth:`Ticket.resize` once the decompressed size is known, which refuses a
request that turns out not to fit. Once decoded a request is charged at least :data:`SPAN_BYTES` a
span (a body of many tiny spans holds far more than 6x its size), and one of more than
``max_spans`` spans is refused whole as too large (413 / INVALID_ARGUMENT: split it), as a body over
the body cap is. When the budget is spent the receivers refuse new work at
once with 503 + ``Retry-After`` / UNAVAILABLE + RetryInfo, so overload costs the client a retry
instead of piling up in the collector as latency and memory. One request is always admitted
when nothing else is in flight, so a body larger than the byte budget still gets in.

``LOOPSIGHT_MAX_INFLIGHT_REQUESTS`` (default 32) and ``LOOPSIGHT_MAX_INFLIGHT_BYTES`` (memory
held by requests in flight; default: the in-flight part of the collector's memory budget,
:mod:`~loopsight.collector.memory`, 32 MiB of the default 400 MiB) set the budget, and
``LOOPSIGHT_MAX_SPANS_PER_REQUEST`` (default 65,536) the spans one request may hold.

Example:
    >>> budget = Admission(max_requests=2, max_bytes=1000, expansion=2)
    >>> first = budget.try_admit(100)
    >>> budget.bytes
    200
    >>> first.resize(450)  # decompressed: 900 bytes held, still fits
    True
    >>> second = budget.try_admit(100)
    >>> second is None  # 900 + 200 > 1000
    True
    >>> first.release()
    >>> budget.try_admit(100) is not None
    True
    >>> budget.check_spans(70_000)
    Traceback (most recent call last):
    ...
    loopsight.ingest.otlp.TooLarge: request of 70000 spans is over the 65536-span limit (LOOPSIGHT_MAX_SPANS_PER_REQUEST): send it in smaller requests
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from loopsight.errors import LoopsightError
from loopsight.ingest.otlp import TooLarge, span_count

DEFAULT_MAX_REQUESTS = 32
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
EXPANSION = 6
# What one span's row holds at least while it waits for its commit, however small its protobuf (a
# request of 420,000 spans without attributes, 38 bytes each, held ~560 bytes a span decoded and
# normalized; docs/reliability.md): the charge of a request of many tiny spans.
SPAN_BYTES = 512
# As many spans as a body at the 16 MiB cap holds (about 240 bytes a span from OTel SDKs): more only
# from spans of a few bytes, which would hold gigabytes (420,000 of them took a collector to 1 GB).
DEFAULT_MAX_SPANS = 65_536


class Overloaded(LoopsightError):
    """Too much work in flight: answered 503 + Retry-After / UNAVAILABLE + RetryInfo."""


class Ticket:
    """One admitted request's share of the budget; :meth:`release` it exactly once."""

    __slots__ = ("_admission", "_released", "nbytes")

    def __init__(self, admission: Admission, nbytes: int) -> None:
        self._admission = admission
        self.nbytes = nbytes
        self._released = False

    def grow(self, body_bytes: int) -> None:
        """Account for a body longer than declared (a chunked body); never refuses."""
        charge = body_bytes * self._admission.expansion
        if charge > self.nbytes and not self._released:
            self._admission._add_bytes(charge - self.nbytes)
            self.nbytes = charge

    def resize(self, body_bytes: int, spans: int = 0) -> bool:
        """Re-charge for the decompressed body size and the spans it holds; ``False`` (charge
        unchanged) when that does not fit beside the other requests in flight: answer 503 /
        UNAVAILABLE then."""
        if self._released:
            return True
        return self._admission._resize(self, max(body_bytes * self._admission.expansion, spans * SPAN_BYTES))

    def admit_decoded(self, body_bytes: int, request: ExportTraceServiceRequest) -> None:
        """Re-charge for a decoded request (:meth:`resize`, with its spans); raises
        :class:`~loopsight.ingest.otlp.TooLarge` for more spans than one request may hold (413 /
        INVALID_ARGUMENT) and :class:`Overloaded` when it does not fit beside the others (503 / UNAVAILABLE)."""
        spans = span_count(request)
        self._admission.check_spans(spans)
        if not self.resize(body_bytes, spans):
            raise Overloaded("collector is busy (in-flight budget spent once decompressed)")

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._admission._release(self.nbytes)


class Admission:
    """Thread-safe budget shared by the OTLP/HTTP and OTLP/gRPC receivers.

    ``expansion`` is the memory charged per body byte: 1 counts bodies only; the collector
    (:meth:`from_env`) uses :data:`EXPANSION`.
    """

    def __init__(
        self,
        max_requests: int = DEFAULT_MAX_REQUESTS,
        max_bytes: int = DEFAULT_MAX_BYTES,
        expansion: int = 1,
        max_spans: int = DEFAULT_MAX_SPANS,
    ) -> None:
        if max_requests < 1 or max_bytes < 1 or expansion < 1 or max_spans < 1:
            raise ValueError("the in-flight budget must allow at least one request, one byte and one span")
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.expansion = expansion
        self.max_spans = max_spans
        self._lock = threading.Lock()
        self.requests = 0
        self.bytes = 0
        self.refused = 0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> Admission:
        """Budget from ``LOOPSIGHT_MAX_INFLIGHT_REQUESTS`` / ``LOOPSIGHT_MAX_INFLIGHT_BYTES``
        (``max_bytes`` when unset: the memory budget's in-flight part) /
        ``LOOPSIGHT_MAX_SPANS_PER_REQUEST``; raises ``ValueError`` with a readable message for a bad value."""
        env = os.environ if environ is None else environ
        values = []
        for name, default in (
            ("LOOPSIGHT_MAX_INFLIGHT_REQUESTS", DEFAULT_MAX_REQUESTS),
            ("LOOPSIGHT_MAX_INFLIGHT_BYTES", max_bytes),
            ("LOOPSIGHT_MAX_SPANS_PER_REQUEST", DEFAULT_MAX_SPANS),
        ):
            raw = env.get(name, "").strip()
            try:
                value = int(raw) if raw else default
            except ValueError:
                raise ValueError(f"{name}={raw!r} is not an integer") from None
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
            values.append(value)
        max_requests, max_inflight_bytes, max_spans = values
        return cls(max_requests, max_inflight_bytes, expansion=EXPANSION, max_spans=max_spans)

    def check_spans(self, spans: int) -> None:
        """Raise :class:`~loopsight.ingest.otlp.TooLarge` for a request of more spans than one may hold."""
        if spans > self.max_spans:
            raise TooLarge(
                f"request of {spans} spans is over the {self.max_spans}-span limit "
                "(LOOPSIGHT_MAX_SPANS_PER_REQUEST): send it in smaller requests"
            )

    def try_admit(self, body_bytes: int) -> Ticket | None:
        """A ticket for a request whose body is ``body_bytes`` long (0 when unknown), or ``None``
        when over budget."""
        nbytes = max(0, body_bytes) * self.expansion
        with self._lock:
            if self.requests and (self.requests >= self.max_requests or self.bytes + nbytes > self.max_bytes):
                self.refused += 1
                return None
            self.requests += 1
            self.bytes += nbytes
        return Ticket(self, nbytes)

    def admit(self, body_bytes: int) -> Ticket:
        """Like :meth:`try_admit` but raises :class:`Overloaded`."""
        ticket = self.try_admit(body_bytes)
        if ticket is None:
            raise Overloaded(f"collector is busy ({self.requests} requests, {self.bytes} bytes in flight)")
        return ticket

    def _add_bytes(self, nbytes: int) -> None:
        with self._lock:
            self.bytes += nbytes

    def _resize(self, ticket: Ticket, nbytes: int) -> bool:
        with self._lock:
            others = self.bytes - ticket.nbytes
            if nbytes > ticket.nbytes and self.requests > 1 and others + nbytes > self.max_bytes:
                self.refused += 1
                return False
            self.bytes = others + nbytes
            ticket.nbytes = nbytes
        return True

    def _release(self, nbytes: int) -> None:
        with self._lock:
            self.requests -= 1
            self.bytes -= nbytes

    def prometheus_lines(self) -> str:
        """Gauges and the refusal counter for ``/metrics``."""
        with self._lock:
            requests, nbytes, refused = self.requests, self.bytes, self.refused
        return "\n".join(
            [
                "# HELP loopsight_inflight_requests Export requests being read, decoded or committed.",
                "# TYPE loopsight_inflight_requests gauge",
                f"loopsight_inflight_requests {requests}",
                "# HELP loopsight_inflight_bytes Memory held by the export requests in flight (estimated: bodies x expansion).",
                "# TYPE loopsight_inflight_bytes gauge",
                f"loopsight_inflight_bytes {nbytes}",
                "# HELP loopsight_overloaded_total Export requests refused because the in-flight budget was spent.",
                "# TYPE loopsight_overloaded_total counter",
                f"loopsight_overloaded_total {refused}",
            ]
        )
