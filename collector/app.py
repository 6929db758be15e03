"""The collector's HTTP application: OTLP/HTTP receiver, health, metrics, query API.

Status codes follow the OTLP/HTTP specification: 200 (with ``partial_success`` for spans
it could not keep), 400 malformed, 413 too large after decompression, 415 other media
types, 503 with ``Retry-After`` when the write queue is full or too much work is already
in flight (:mod:`~loopsight.collector.admission`, checked before the body is read).
Decoding and normalizing run in a worker thread so ``/healthz`` and the query API stay
responsive under load. Error bodies are a
``google.rpc.Status`` in the request's encoding (JSON for JSON and unknown types); under
``/api/`` they are ``{"error": "..."}`` (401, 404, 405 included), as docs/api.md says.

Example:
    >>> app = create_app(store, Settings())  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from loopsight.collector.admission import Admission, Overloaded
from loopsight.collector.api import query_routes
from loopsight.collector.metrics import Metrics
from loopsight.collector.receiver import Receiver
from loopsight.ingest.normalize import Limits
from loopsight.ingest.otlp import (
    JSON,
    PROTOBUF,
    BadRequest,
    TooLarge,
    UnsupportedMediaType,
    decompress,
    media_type,
    parse_request,
)
from loopsight.stores import QueueFull, StoreError

log = logging.getLogger("loopsight.collector")

# a request refused before it was queued: its outcome on /metrics (None: the queue counts its
# own) and its HTTP status (503: retry later)
_REFUSED: tuple[tuple[type[Exception], str | None, int], ...] = (
    (QueueFull, None, 503),
    (Overloaded, "overloaded", 503),
    (UnsupportedMediaType, "unsupported_media_type", 415),
    (TooLarge, "too_large", 413),
    (BadRequest, "bad_request", 400),
)
_REFUSALS = tuple(kind for kind, _, _ in _REFUSED)

_GRPC_CODES = {
    400: code_pb2.INVALID_ARGUMENT,
    401: code_pb2.UNAUTHENTICATED,
    404: code_pb2.NOT_FOUND,
    405: code_pb2.UNIMPLEMENTED,
    413: code_pb2.INVALID_ARGUMENT,
    415: code_pb2.INVALID_ARGUMENT,
    503: code_pb2.UNAVAILABLE,
}


@dataclass(frozen=True)
class Settings:
    """What the receiver enforces."""

    max_body_bytes: int = 16 * 1024 * 1024
    token: str | None = None
    limits: Limits = field(default_factory=Limits)
    retry_after_seconds: int = 2
    admission: Admission | None = None  # None: Admission.from_env()
    decode_threads: int = 1  # GIL-bound work: more threads only add contention


def token_matches(given: str | bytes | None, token: str) -> bool:
    """Constant-time check of an ``Authorization`` value against ``Bearer <token>``."""
    if given is None:
        return False
    if isinstance(given, str):
        given = given.encode("utf-8", "surrogateescape")
    # RFC 9110: the scheme is case-insensitive; the token is compared in constant time
    return given[:7].lower() == b"bearer " and hmac.compare_digest(given[7:], token.encode())


def is_api(path: str) -> bool:
    """Whether ``path`` belongs to the query API (errors as ``{"error": ...}``)."""
    path = "/" + path.lstrip("/")  # //api/v1/runs is the API's too (no route), not a plain-text page
    return path == "/api" or path.startswith("/api/")


class BearerAuth:
    """Require ``Authorization: Bearer <token>`` on every route but ``/healthz``."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.token is None or scope["type"] != "http" or scope["path"] == "/healthz":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization")
        if not token_matches(given, self.token):
            message = "missing or wrong bearer token"
            challenge = {"WWW-Authenticate": "Bearer"}
            response: Response
            if is_api(scope["path"]):
                response = JSONResponse({"error": message}, status_code=401, headers=challenge)
            else:  # OTLP's Status, in the request's content type as every other /v1/traces answer
                kind = _answer_kind(dict(scope["headers"]).get(b"content-type", b"").decode("latin-1"))
                response = _error(kind, 401, message, challenge)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _otlp_response(kind: str, rejected: int = 0, message: str = "") -> Response:
    body = ExportTraceServiceResponse()
    if rejected:
        body.partial_success.rejected_spans = rejected
        body.partial_success.error_message = message
    if kind == JSON:
        return Response(json_format.MessageToJson(body, indent=None), media_type=JSON)
    return Response(body.SerializeToString(), media_type=PROTOBUF)


def _answer_kind(content_type: str | None) -> str:
    """The encoding of an OTLP error answer: the request's, JSON for JSON and any other type."""
    try:
        return media_type(content_type)
    except UnsupportedMediaType:
        return JSON


def _error(kind: str, status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    if kind == PROTOBUF:
        body = status_pb2.Status(code=_GRPC_CODES.get(status, code_pb2.UNKNOWN), message=message)
        return Response(body.SerializeToString(), status_code=status, media_type=PROTOBUF, headers=headers)
    return JSONResponse(
        {"code": _GRPC_CODES.get(status, code_pb2.UNKNOWN), "message": message}, status_code=status, headers=headers
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's 404/405 as ``{"error": ...}`` under ``/api/``, elsewhere as the OTLP error body
    (``google.rpc.Status``, protobuf for a protobuf request) that ``/v1/traces`` and a 401 answer."""
    assert isinstance(exc, HTTPException)
    if exc.status_code in {204, 304}:
        return Response(status_code=exc.status_code, headers=exc.headers)
    path = request.scope["path"]
    shown = path[:200]
    if exc.status_code == 404:
        message = f"no route {shown}"
    elif exc.status_code == 405:
        allowed = ", ".join(sorted((exc.headers or {}).get("Allow", "").split(", ")))
        message = f"method {request.method[:16]} not allowed on {shown} (allowed: {allowed})"
    else:
        message = exc.detail
    if not is_api(path):
        return _error(
            _answer_kind(request.headers.get("content-type")), exc.status_code, message, dict(exc.headers or {})
        )
    return JSONResponse({"error": message}, status_code=exc.status_code, headers=exc.headers)


def _declared_length(request: Request, cap: int) -> int:
    """The body's ``Content-Length`` (0 when not given); raises TooLarge over ``cap``."""
    declared = request.headers.get("content-length")
    length = int(declared) if declared and declared.isdigit() else 0
    if length > cap:
        raise TooLarge(f"body of {length} bytes is over the {cap}-byte limit")
    return length


async def _read_body(request: Request, cap: int) -> bytes:
    chunks = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise TooLarge(f"body is over the {cap}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(
    store: Any,
    settings: Settings,
    *,
    metrics: Metrics | None = None,
    forwarder: Any = None,
    extra_routes: Sequence[BaseRoute] = (),
) -> Starlette:
    """The Starlette app serving ``store`` (a :class:`~loopsight.stores.duckdb_store.Store` or
    any writer with the same ``submit``/``reader``)."""
    metrics = metrics or Metrics()
    if metrics.store is None:
        metrics.store = store
    receiver = Receiver(
        store,
        settings.limits,
        metrics,
        forwarder,
        admission=settings.admission if settings.admission is not None else Admission.from_env(),
    )
    metrics.extra_metrics.append(receiver.admission.prometheus_lines)
    retry_after = {"Retry-After": str(settings.retry_after_seconds)}

    admission = receiver.admission
    limiter: list[anyio.CapacityLimiter] = []  # created on first use, inside the event loop

    def decode_and_queue(body: bytes, kind: str, encoding: str | None, ticket: Any) -> Any:
        try:
            data = decompress(body, encoding, settings.max_body_bytes)
            export = parse_request(data, kind)
            # A protobuf body's decompressed length is its size (ByteSize() would walk every span).
            ticket.admit_decoded(len(data) if kind == PROTOBUF else export.ByteSize(), export)
            prepared, future = receiver.accept(export, "http")
        except _REFUSALS as exc:
            # Returned, not raised across the thread: a traceback would keep this frame's body and
            # decoded request (~100 MB for 16 MiB of tiny spans) alive in a cycle until a GC ran.
            return exc.with_traceback(None)
        # Only the Arrow table waits for the commit; the forwarder gets the request re-encoded.
        forward = export.SerializeToString() if receiver.forwarder is not None and prepared.accepted else None
        return forward, prepared, future

    async def traces(request: Request) -> Response:
        kind = JSON
        try:
            kind = media_type(request.headers.get("content-type"))
        except UnsupportedMediaType as exc:
            metrics.request("http", "unsupported_media_type")
            return _error(kind, 415, str(exc))
        try:  # before admission: a body that can never fit is 413, not 503 (and retried) while others are in flight
            declared = _declared_length(request, settings.max_body_bytes)
        except TooLarge as exc:
            metrics.request("http", "too_large")
            return _error(kind, 413, str(exc))
        ticket = admission.try_admit(declared)
        if ticket is None:
            metrics.request("http", "overloaded")
            return _error(kind, 503, "collector is busy (in-flight budget spent); retry later", retry_after)
        try:
            return await _export(request, kind, ticket)
        finally:
            ticket.release()

    def refusal(kind: str, exc: Exception) -> Response:
        """The answer to a request refused before it was queued."""
        outcome, status = next((o, code) for refused, o, code in _REFUSED if isinstance(exc, refused))
        if outcome is not None:
            metrics.request("http", outcome)
        if status == 503:
            return _error(kind, 503, f"{exc}; retry later", retry_after)
        return _error(kind, status, str(exc))

    async def _export(request: Request, kind: str, ticket: Any) -> Response:
        try:
            body = await _read_body(request, settings.max_body_bytes)
            ticket.grow(len(body))
            if not limiter:
                limiter.append(anyio.CapacityLimiter(max(1, settings.decode_threads)))
            decoded = await anyio.to_thread.run_sync(
                decode_and_queue, body, kind, request.headers.get("content-encoding"), ticket, limiter=limiter[0]
            )
            del body
        except ClientDisconnect:  # a client gone before its whole body came (its timeout, a dropped link): no answer
            metrics.request("http", "disconnected")
            return _error(kind, 400, "the client disconnected before its body was read")
        except _REFUSALS as exc:
            return refusal(kind, exc)
        if isinstance(decoded, Exception):
            return refusal(kind, decoded)
        forward, prepared, future = decoded
        error: BaseException | None = None
        if future is not None:
            try:
                await asyncio.wrap_future(future)
            except StoreError as exc:
                error = exc
        outcome = receiver.settle(prepared, "http", error, forward, request.headers.get("via"))
        if outcome.error is not None:
            return _error(kind, 503, str(error), retry_after)
        return _otlp_response(kind, outcome.rejected, outcome.message)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def prometheus(request: Request) -> Response:
        # In a thread: the agent gauges may query the store, and ingest must not wait for them.
        text = await anyio.to_thread.run_sync(metrics.render)
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    routes = [
        Route("/v1/traces", traces, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", prometheus, methods=["GET"]),
        *extra_routes,
        *query_routes(store.reader),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(BearerAuth, token=settings.token)],
        exception_handlers={HTTPException: _http_error},
    )
    app.state.metrics = metrics
    app.state.receiver = receiver
    return app
