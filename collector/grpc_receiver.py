"""OTLP/gRPC ``TraceService/Export`` on its own port, in the collector process.

UNAVAILABLE with a ``google.rpc.RetryInfo`` (its own trailer and in the rich status) when the write queue is full or the
in-flight budget shared with OTLP/HTTP is spent (the OTel exporters wait that long and retry), INVALID_ARGUMENT for spans it cannot read,
UNAUTHENTICATED without the bearer token, ``partial_success`` for spans it rejected.
The answer is sent only after the spans are committed.

Example:
    >>> server = start_grpc(receiver, "127.0.0.1", 4317, token=None)  # doctest: +SKIP
    >>> server.stop(grace=5)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from concurrent import futures

import grpc
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import DecodeError
from google.rpc import status_pb2
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from loopsight.collector.admission import Overloaded, Ticket
from loopsight.collector.app import token_matches
from loopsight.collector.receiver import Receiver
from loopsight.config import host_port
from loopsight.ingest.otlp import TooLarge, parse_protobuf
from loopsight.stores import QueueFull

log = logging.getLogger("loopsight.collector")


SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
MAX_CONCURRENT_CALLS = 256


class TraceService:
    """The servicer: same ingest path as OTLP/HTTP. It takes raw bytes so that a body
    that is not an ``ExportTraceServiceRequest`` is INVALID_ARGUMENT, not INTERNAL."""

    def __init__(
        self, receiver: Receiver, token: str | None, retry_after_seconds: int = 2, timeout: float = 120.0
    ) -> None:
        self.receiver = receiver
        self.token = token
        self.retry_info = RetryInfo(retry_delay=Duration(seconds=retry_after_seconds))
        self.timeout = timeout

    def _refused(
        self, context: grpc.ServicerContext, code: grpc.StatusCode, message: str
    ) -> ExportTraceServiceResponse:
        """Answer ``code`` without raising: an abort's traceback would keep the handler's frames,
        with the body and the decoded request, alive in a cycle until a garbage collection."""
        if code == grpc.StatusCode.UNAVAILABLE:
            # The Python exporter reads RetryInfo from its own trailer, the Go exporters (and so the
            # OTel Collector) from the rich status in grpc-status-details-bin: send both.
            details = status_pb2.Status(code=code.value[0], message=message)
            details.details.add().Pack(self.retry_info)
            context.set_trailing_metadata(
                (
                    ("google.rpc.retryinfo-bin", self.retry_info.SerializeToString()),
                    ("grpc-status-details-bin", details.SerializeToString()),
                )
            )
        context.set_code(code)
        context.set_details(message)
        return ExportTraceServiceResponse()

    def handler(self) -> grpc.GenericRpcHandler:
        return grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "Export": grpc.unary_unary_rpc_method_handler(
                    self.export, response_serializer=ExportTraceServiceResponse.SerializeToString
                )
            },
        )

    def export(self, body: bytes, context: grpc.ServicerContext) -> ExportTraceServiceResponse:
        metrics = self.receiver.metrics
        if self.token is not None:
            given = dict(context.invocation_metadata()).get("authorization")
            if not token_matches(given, self.token):
                metrics.request("grpc", "unauthenticated")
                return self._refused(context, grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        ticket = self.receiver.admission.try_admit(len(body))
        if ticket is None:
            metrics.request("grpc", "overloaded")
            return self._refused(
                context, grpc.StatusCode.UNAVAILABLE, "collector is busy (in-flight budget spent); retry later"
            )
        try:
            return self._export(body, context, ticket)
        finally:
            ticket.release()

    def _export(self, body: bytes, context: grpc.ServicerContext, ticket: Ticket) -> ExportTraceServiceResponse:
        try:
            request = parse_protobuf(body)
        except (DecodeError, RecursionError) as exc:
            self.receiver.metrics.request("grpc", "bad_request")
            return self._refused(
                context, grpc.StatusCode.INVALID_ARGUMENT, f"malformed ExportTraceServiceRequest: {exc}"
            )
        refusal = self._refusal(request, len(body), ticket)
        if refusal is not None:
            return self._refused(context, *refusal)
        parsed = [request]
        del request  # waiting for the commit holds the Arrow table only; the body is what is forwarded
        return self._ingest(parsed, body, context)

    def _refusal(
        self, request: ExportTraceServiceRequest, size: int, ticket: Ticket
    ) -> tuple[grpc.StatusCode, str] | None:
        """Why a decoded request is refused (``None``: it is not)."""
        try:
            ticket.admit_decoded(size, request)
        except TooLarge as exc:  # as HTTP's 413: it never fits, so not retryable
            self.receiver.metrics.request("grpc", "too_large")
            return grpc.StatusCode.INVALID_ARGUMENT, str(exc)
        except Overloaded as exc:
            self.receiver.metrics.request("grpc", "overloaded")
            return grpc.StatusCode.UNAVAILABLE, f"{exc}; retry later"
        return None

    def _ingest(
        self, parsed: list[ExportTraceServiceRequest], body: bytes, context: grpc.ServicerContext
    ) -> ExportTraceServiceResponse:
        """Store the request ``parsed`` holds (taken from it: freed once accepted) and answer."""
        try:
            outcome = self.receiver.ingest(parsed.pop(), "grpc", body, self.timeout)
        except QueueFull as exc:
            return self._refused(context, grpc.StatusCode.UNAVAILABLE, f"{exc}; retry later")
        if outcome.error is not None:
            return self._refused(context, grpc.StatusCode.UNAVAILABLE, outcome.error)
        response = ExportTraceServiceResponse()
        if outcome.rejected:
            response.partial_success.rejected_spans = outcome.rejected
            response.partial_success.error_message = outcome.message
        return response


def start_grpc(
    receiver: Receiver,
    host: str,
    port: int,
    *,
    token: str | None = None,
    max_message_bytes: int = 16 * 1024 * 1024,
    retry_after_seconds: int = 2,
    workers: int = 8,
) -> grpc.Server:
    """Start serving ``TraceService`` on ``host:port``; raises ``OSError`` if it cannot bind."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="loopsight-grpc"),
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.so_reuseport", 0),
        ],
        # gRPC answers calls over this cap RESOURCE_EXHAUSTED without RetryInfo, which the Go
        # exporters drop: it is only a backstop far above a fleet's burst. Calls beyond the
        # workers wait for one; overload is the admission budget's to refuse (UNAVAILABLE).
        # (An HTTP/2 stream limit instead makes the Python client fail calls with REFUSED_STREAM.)
        maximum_concurrent_rpcs=MAX_CONCURRENT_CALLS,
    )
    server.add_generic_rpc_handlers((TraceService(receiver, token, retry_after_seconds).handler(),))
    address = host_port(host, port)
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError as exc:
        raise OSError(f"cannot listen on {address} (gRPC): {exc}") from None
    if bound == 0:
        raise OSError(f"cannot listen on {address} (gRPC): address in use or not available")
    server.start()
    return server
