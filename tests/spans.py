"""The one place tests build spans: raw OTLP protobuf spans and requests, and an in-memory
OTel SDK tracer.

Example:
    >>> request = request_of(make_run(tools=2))
    >>> len(request.resource_spans[0].scope_spans[0].spans)
    4
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status
from opentelemetry.sdk.trace import Tracer, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def kv(key: str, value: Any) -> KeyValue:
    """An OTLP attribute: bools, ints and anything else as its text."""
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=str(value)))


def make_run(
    tools: int = 2, *, start_ns: int | None = None, trace_id: bytes | None = None, agent: str = "helper"
) -> list[Span]:
    """A run span (last, as the SDK exports it) with one chat and ``tools`` tool spans."""
    trace_id = trace_id or os.urandom(16)
    root = os.urandom(8)
    t0 = start_ns or time.time_ns() - 10_000_000_000
    spans = [
        Span(
            trace_id=trace_id,
            span_id=os.urandom(8),
            parent_span_id=root,
            name="chat gpt-4o",
            kind=Span.SPAN_KIND_CLIENT,
            start_time_unix_nano=t0 + 1_000,
            end_time_unix_nano=t0 + 1_000_000,
            attributes=[
                kv("gen_ai.operation.name", "chat"),
                kv("gen_ai.request.model", "gpt-4o"),
                kv("gen_ai.usage.input_tokens", 100),
                kv("gen_ai.usage.output_tokens", 10),
                kv("loopsight.step", 0),
            ],
        )
    ]
    for i in range(tools):
        spans.append(
            Span(
                trace_id=trace_id,
                span_id=os.urandom(8),
                parent_span_id=root,
                name="execute_tool search",
                start_time_unix_nano=t0 + 2_000_000 + i,
                end_time_unix_nano=t0 + 3_000_000 + i,
                attributes=[
                    kv("gen_ai.operation.name", "execute_tool"),
                    kv("gen_ai.tool.name", "search"),
                    kv("loopsight.step", 0),
                    kv("loopsight.tool.args_hash", f"{i:016x}"),
                ],
            )
        )
    spans.append(
        Span(
            trace_id=trace_id,
            span_id=root,
            name=f"invoke_agent {agent}",
            start_time_unix_nano=t0,
            end_time_unix_nano=t0 + 4_000_000,
            status=Status(code=Status.STATUS_CODE_OK),
            attributes=[
                kv("gen_ai.operation.name", "invoke_agent"),
                kv("gen_ai.agent.name", agent),
                kv("loopsight.termination.reason", "completed"),
            ],
        )
    )
    return spans


def run_with_two_calls(agent: str) -> list[Span]:
    """:func:`make_run` with one tool and its model call twice (two spans, 100 input tokens each)."""
    spans = make_run(tools=1, agent=agent)
    second_call = Span()
    second_call.CopyFrom(spans[0])
    second_call.span_id = os.urandom(8)
    spans.insert(1, second_call)
    return spans


def request_of(spans: Iterable[Span], service: str = "test-agent") -> ExportTraceServiceRequest:
    """One ExportTraceServiceRequest holding ``spans`` of one service."""
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=[kv("service.name", service)]),
                scope_spans=[ScopeSpans(spans=list(spans))],
            )
        ]
    )


def tool_span(
    trace_id: bytes,
    span_id: bytes,
    start_ns: int,
    attrs: dict[str, object] | None = None,
    name: str = "execute_tool search",
) -> Span:
    """A finished tool span with the given attributes."""
    base = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        name=name,
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=start_ns,
        end_time_unix_nano=start_ns + 1_000_000,
        attributes=[kv(k, v) for k, v in {**base, **(attrs or {})}.items()],
    )


def failed(span: Span, error_type: str, message: str, stacktrace: str, at: int | None = None) -> Span:
    """``span`` failed with ``message`` as its status and an ``exception`` event (at ``at``, default
    1 ns after its start); returns it."""
    span.status.code = Status.STATUS_CODE_ERROR
    span.status.message = message
    attributes = [
        kv("exception.type", error_type),
        kv("exception.message", message),
        kv("exception.stacktrace", stacktrace),
    ]
    span.events.append(
        Span.Event(time_unix_nano=at or span.start_time_unix_nano + 1, name="exception", attributes=attributes)
    )
    return span


@contextmanager
def memory_tracer(name: str = "test") -> Iterator[tuple[Tracer, InMemorySpanExporter]]:
    """An OTel SDK tracer whose finished spans collect in memory (the provider shut down after)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        yield provider.get_tracer(name), exporter
    finally:
        provider.shutdown()


def span_count(db_path: str) -> int:
    """Spans stored in the DuckDB file, opened read-only."""
    import duckdb

    con = duckdb.connect(db_path, read_only=True)
    try:
        return con.execute("SELECT count(*) FROM spans").fetchone()[0]
    finally:
        con.close()


def span_counts(db_path: str) -> tuple[int, int]:
    """Spans stored in the DuckDB file and how many of them are distinct (trace id, span id)."""
    import duckdb

    con = duckdb.connect(db_path, read_only=True)
    try:
        return con.execute('SELECT count(*), count(DISTINCT ("TraceId", "SpanId")) FROM spans').fetchone()
    finally:
        con.close()
