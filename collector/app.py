"""The collector's HTTP application: OTLP/HTTP receiver, health, query API.

Example:
    >>> app = create_app(store, Settings())  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from loopsight.collector.api import query_routes
from loopsight.collector.batch import to_arrow
from loopsight.collector.normalize import Limits
from loopsight.collector.otlp import JSON, PROTOBUF, BadRequest, TooLarge, UnsupportedMediaType, decode_request, iter_rows, media_type
from loopsight.collector.store import QueueFull, Store, StoreError

log = logging.getLogger("loopsight.collector")


@dataclass(frozen=True)
class Settings:
    """What the receiver enforces."""

    max_body_bytes: int = 16 * 1024 * 1024
    token: str | None = None
    limits: Limits = Limits()
    retry_after_seconds: int = 2


class BearerAuth:
    """Require ``Authorization: Bearer <token>`` on every route but ``/healthz``."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.expected is None or scope["type"] != "http" or scope["path"] == "/healthz":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization", b"")
        if not hmac.compare_digest(given, self.expected):
            response = JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                    headers={"WWW-Authenticate": "Bearer"})
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


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    # OTLP/HTTP carries errors as a google.rpc.Status; JSON with a message is readable by both.
    return JSONResponse({"code": status, "message": message}, status_code=status, headers=headers)


async def _read_body(request: Request, cap: int) -> bytes:
    chunks = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise TooLarge(f"body is over the {cap}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(store: Store, settings: Settings) -> Starlette:
    """The Starlette app serving ``store``."""

    async def traces(request: Request) -> Response:
        try:
            kind = media_type(request.headers.get("content-type"))
            body = await _read_body(request, settings.max_body_bytes)
            export = decode_request(body, kind, request.headers.get("content-encoding"), settings.max_body_bytes)
        except UnsupportedMediaType as exc:
            return _error(415, str(exc))
        except TooLarge as exc:
            return _error(413, str(exc))
        except BadRequest as exc:
            return _error(400, str(exc))
        rows, reasons = [], []
        for item in iter_rows(export, settings.limits):
            (reasons if isinstance(item, str) else rows).append(item)
        if rows:
            try:
                future = store.submit(to_arrow(rows))
            except QueueFull as exc:
                return _error(503, f"{exc}; retry later", {"Retry-After": str(settings.retry_after_seconds)})
            try:
                await asyncio.wrap_future(future)
            except StoreError as exc:
                return _error(503, f"could not store spans: {exc}", {"Retry-After": str(settings.retry_after_seconds)})
        message = f"{len(reasons)} span(s) rejected: {sorted(set(reasons))[0]}" if reasons else ""
        return _otlp_response(kind, len(reasons), message)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    routes = [
        Route("/v1/traces", traces, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        *query_routes(store.reader),
    ]
    return Starlette(routes=routes, middleware=[Middleware(BearerAuth, token=settings.token)])
