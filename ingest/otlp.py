"""Decode OTLP trace export requests (protobuf or JSON, gzip or deflate) with hard size caps.

Example:
    >>> req = decode_request(b"", "application/x-protobuf", None, 1024)
    >>> len(req.resource_spans)
    0
"""

from __future__ import annotations

import base64
import functools
import json
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from loopsight.errors import LoopsightError
from loopsight.ingest.normalize import (
    MAX_NANOS,
    CallBatch,
    Limits,
    SpanRow,
    attributes_to_dict,
    read_or_reason,
    span_row,
    truncated,
)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class BadRequest(LoopsightError):
    """Malformed input: answered 400 / INVALID_ARGUMENT with this message."""


class TooLarge(LoopsightError):
    """Body over the limit after decompression: answered 413."""


class UnsupportedMediaType(LoopsightError):
    """Neither protobuf nor JSON: answered 415."""


def media_type(content_type: str | None) -> str:
    """``application/json; charset=utf-8`` -> ``application/json``; anything else -> 415."""
    base = (content_type or "").split(";", 1)[0].strip().lower()
    if base in (PROTOBUF, JSON):
        return base
    raise UnsupportedMediaType(f"unsupported content type {content_type!r}: use {PROTOBUF} or {JSON}")


_FIRST_SLICE = 256  # bytes first fed to the decoder of a member after the first; 4x more each time after
_LAST_SLICE = 1 << 20


class TrailingData(LoopsightError):
    """Bytes after the end of a zlib or raw deflate stream (``args[0]``: how many)."""


def inflate(data: bytes, wbits: int, max_bytes: int | None = None, first: int | None = None) -> Iterator[bytes]:
    """The decompressed pieces of ``data``, member after member: a gzip stream may hold several
    (RFC 1952), and zero padding after the last is allowed, as gzip(1) does. Raises ``zlib.error``
    on data that is not valid, ``EOFError`` for a member cut short, :class:`TooLarge` past
    ``max_bytes`` and :class:`TrailingData` for bytes after a stream that is not gzip's; the pieces
    before are yielded first. ``first``: bytes fed at once to the first member (``None``: all of it).

    Example:
        >>> import gzip
        >>> b"".join(inflate(gzip.compress(b"a") + gzip.compress(b"b") + b"\\0" * 4, 31))
        b'ab'
    """
    view = memoryview(data)
    size = start = 0  # what came out so far; where the member being decoded starts
    while True:
        decoder = zlib.decompressobj(wbits)
        # The members after the first are fed growing slices: a member's unused_data is a copy of
        # what it was fed past its end, so feeding each the rest made a body of many tiny members
        # quadratic (4 MB of empty members took 22 s, holding up every other request's decoding).
        offset, step = start, (first or len(data)) if start == 0 else _FIRST_SLICE
        while not decoder.eof and offset < len(data):
            piece = view[offset : offset + step]
            out = decoder.decompress(piece, 0 if max_bytes is None else max_bytes + 1 - size)  # 0: unbounded
            size += len(out)
            if max_bytes is not None and (size > max_bytes or decoder.unconsumed_tail):
                raise TooLarge(f"body is over the {max_bytes}-byte limit after decompression")
            yield out
            offset += len(piece) - len(decoder.unused_data)
            step = min(step * 4, _LAST_SLICE)
        if not decoder.eof:
            raise EOFError("cut short before its end-of-stream marker")
        start = offset
        # no member starts with a zero byte: the rest is looked at (and counted) only then
        if start == len(data) or (data[start] == 0 and data.count(b"\x00", start) == len(data) - start):
            return
        if wbits < 16:  # zlib or raw deflate: one stream
            raise TrailingData(len(data) - start)


def decompress(body: bytes, encoding: str | None, max_bytes: int) -> bytes:
    """Undo ``Content-Encoding`` gzip/deflate, streaming, never producing more than ``max_bytes``."""
    encoding = (encoding or "identity").strip().lower()
    if encoding in ("", "identity"):
        if len(body) > max_bytes:
            raise TooLarge(f"body of {len(body)} bytes is over the {max_bytes}-byte limit")
        return body
    if encoding == "gzip":
        wbits = 16 + zlib.MAX_WBITS
    elif encoding == "deflate":
        wbits = zlib.MAX_WBITS if body[:1] == b"\x78" else -zlib.MAX_WBITS
    else:
        raise UnsupportedMediaType(f"unsupported content encoding {encoding!r}: use gzip or deflate")
    try:
        parts = list(inflate(body, wbits, max_bytes))
    except zlib.error as exc:
        raise BadRequest(f"body is not valid {encoding}: {exc}") from None
    except EOFError:
        raise BadRequest(f"body is truncated {encoding} data") from None
    except TrailingData as exc:
        raise BadRequest(f"body has {exc.args[0]} bytes after the end of the {encoding} data") from None
    return parts[0] if len(parts) == 1 else b"".join(parts)


_ID_FIELDS = {
    "traceId",
    "spanId",
    "parentSpanId",
    "trace_id",
    "span_id",
    "parent_span_id",
}  # as the OTel Collector reads them
_ZERO_TRACE_ID = bytes(16)
_ZERO_SPAN_ID = bytes(8)


def _hex_ids_to_base64(node: Any) -> None:
    # OTLP/JSON spells ids as hex; protobuf's JSON mapping expects base64 bytes.
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_FIELDS and isinstance(value, str):
                try:
                    raw = bytes.fromhex(value)
                except ValueError:
                    raise BadRequest(f"{key} {value[:40]!r} is not hex") from None
                node[key] = base64.b64encode(raw).decode()
            else:
                _hex_ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids_to_base64(item)


def _legacy_scopes(request: dict[str, Any]) -> None:
    # OTLP before 0.19 (2022) named scopes "instrumentation library": read them, not drop them.
    for resources, scopes, spans, scope, library in (
        ("resourceSpans", "scopeSpans", "instrumentationLibrarySpans", "scope", "instrumentationLibrary"),
        ("resource_spans", "scope_spans", "instrumentation_library_spans", "scope", "instrumentation_library"),
    ):
        found = request.get(resources)
        for resource_spans in found if isinstance(found, list) else ():
            legacy = resource_spans.get(spans) if isinstance(resource_spans, dict) else None
            if not isinstance(legacy, list) or scopes in resource_spans:
                continue
            for scope_spans in legacy:
                if isinstance(scope_spans, dict) and library in scope_spans and scope not in scope_spans:
                    scope_spans[scope] = scope_spans.pop(library)
            resource_spans[scopes] = resource_spans.pop(spans)


def decode_request(body: bytes, content_type: str, encoding: str | None, max_bytes: int) -> ExportTraceServiceRequest:
    """Decode an export request body; raises BadRequest, TooLarge or UnsupportedMediaType."""
    kind = media_type(content_type)
    return parse_request(decompress(body, encoding, max_bytes), kind)


_OTLP_FILES = (common_pb2, resource_pb2, trace_pb2, trace_service_pb2)  # each after those it imports


def _messages(messages: Iterable[Any]) -> Iterator[Any]:
    """Message types (descriptors or their protos) and every type nested in them."""
    for message in messages:
        yield message
        yield from _messages(message.nested_types if hasattr(message, "nested_types") else message.nested_type)


_STRINGS = frozenset(
    f.full_name
    for module in _OTLP_FILES
    for message in _messages(module.DESCRIPTOR.message_types_by_name.values())
    for f in message.fields
    if f.type == f.TYPE_STRING
)
"""The OTLP fields protobuf requires to be UTF-8."""


@functools.cache
def _lenient_request_type() -> Any:
    """``ExportTraceServiceRequest`` with every string field read as bytes (a pool of its own)."""
    pool = descriptor_pool.DescriptorPool()
    for module in _OTLP_FILES:
        proto = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(proto)
        for message in _messages(proto.message_type):
            for field in message.field:
                if field.type == descriptor_pb2.FieldDescriptorProto.TYPE_STRING:
                    field.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
        pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(ExportTraceServiceRequest.DESCRIPTOR.full_name))


def _repeated(field: Any) -> bool:
    repeated = getattr(field, "is_repeated", None)  # protobuf 6+; ``label`` before (and gone in 7)
    return bool(repeated) if repeated is not None else field.label == field.LABEL_REPEATED


def _valid_utf8(message: Any) -> None:
    for field, value in message.ListFields():
        if field.full_name in _STRINGS:
            if _repeated(field):
                value[:] = [v.decode("utf-8", "replace").encode() for v in value]
            else:
                setattr(message, field.name, value.decode("utf-8", "replace").encode())
        elif field.message_type is not None:
            for item in value if _repeated(field) else [value]:
                _valid_utf8(item)


def parse_protobuf(data: bytes) -> ExportTraceServiceRequest:
    """A protobuf ``ExportTraceServiceRequest``; raises ``DecodeError`` (or ``RecursionError``) as
    ``ParseFromString`` does. A string that is not valid UTF-8 (Go and Rust SDKs send them, and the
    OTel Collector passes them on) has its bad bytes replaced by U+FFFD instead of losing the whole
    request, as opentelemetry-proto recommends.

    Example:
        >>> from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
        >>> good = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[Span(name="ab")])])])
        >>> parse_protobuf(good.SerializeToString().replace(b"ab", b"a\\xff")).resource_spans[0].scope_spans[0].spans[0].name
        'a\ufffd'
    """
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(data)
    except DecodeError:
        lenient = _lenient_request_type()()
        try:
            lenient.ParseFromString(data)
        except DecodeError:
            raise DecodeError("not an ExportTraceServiceRequest") from None  # not a UTF-8 matter: malformed
        _valid_utf8(lenient)
        request.ParseFromString(lenient.SerializeToString())
    return request


def span_count(request: ExportTraceServiceRequest) -> int:
    """The spans an export request holds.

    Example:
        >>> span_count(ExportTraceServiceRequest())
        0
    """
    return sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)


def parse_request(data: bytes, kind: str) -> ExportTraceServiceRequest:
    """Parse a decompressed body of media type ``kind`` (:data:`PROTOBUF` or :data:`JSON`); raises BadRequest."""
    if kind == PROTOBUF:
        try:
            return parse_protobuf(data)
        except (DecodeError, RecursionError) as exc:
            raise BadRequest(f"malformed protobuf ExportTraceServiceRequest: {exc}") from None
    request = ExportTraceServiceRequest()
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"malformed JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise BadRequest("JSON body must be an object with resourceSpans")
    _hex_ids_to_base64(parsed)
    _legacy_scopes(parsed)
    try:
        json_format.ParseDict(parsed, request, ignore_unknown_fields=True)
    except (json_format.ParseError, RecursionError, ValueError, TypeError) as exc:
        raise BadRequest(f"JSON is not an OTLP ExportTraceServiceRequest: {exc}") from None
    return request


def iter_rows(request: ExportTraceServiceRequest, limits: Limits) -> Iterator[SpanRow | str]:
    """Normalized rows of every span; a rejected span yields the reason (a str) instead.

    The tool calls' args hashes and argument features are computed for the whole request at
    once (:class:`loopsight.ingest.normalize.CallBatch`), so the rows come when all are made."""
    batch = CallBatch()
    out: list[SpanRow | str] = []
    for item in _rows(request, limits, batch, out):
        out.append(item)
    batch.fill(out)
    return iter(out)


def _rows(
    request: ExportTraceServiceRequest, limits: Limits, batch: CallBatch, out: list[SpanRow | str]
) -> Iterator[SpanRow | str]:
    for resource_spans in request.resource_spans:
        resource = attributes_to_dict(resource_spans.resource.attributes, limits)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope
            scope_name, scope_version = (
                truncated(scope.name, limits.max_attribute_length),
                truncated(scope.version, limits.max_attribute_length),
            )
            for span in scope_spans.spans:
                trace_id, span_id, parent_span_id = span.trace_id, span.span_id, span.parent_span_id
                if len(trace_id) != 16 or len(span_id) != 8:
                    yield "invalid trace_id or span_id length"
                    continue
                # OTLP: a valid id has at least one non-zero byte. Stored, all-zero ids from
                # unrelated senders would merge into one trace and drop each other as repeats.
                if trace_id == _ZERO_TRACE_ID or span_id == _ZERO_SPAN_ID:
                    yield "all-zero trace_id or span_id"
                    continue
                if parent_span_id == _ZERO_SPAN_ID:  # some SDKs mark a root this way
                    parent_span_id = b""
                elif parent_span_id and len(parent_span_id) != 8:
                    yield "invalid parent_span_id length"
                    continue
                start_ns = span.start_time_unix_nano
                if start_ns > MAX_NANOS:
                    yield "start time out of range"
                    continue
                batch.position = len(out)
                yield read_or_reason(
                    batch,
                    span_row,
                    span,
                    trace_id,
                    span_id,
                    parent_span_id,
                    start_ns,
                    resource,
                    scope_name,
                    scope_version,
                    limits,
                    batch,
                )
