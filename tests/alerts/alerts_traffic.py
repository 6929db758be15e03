"""Fixture traffic: agent runs built with the real OTel SDK at chosen times, ingested for real.

Spans get explicit start/end times so tests can place runs in windows around an injected
clock instead of sleeping. Ingest goes through ``loopsight.ingest.pipeline`` (OTLP
encode -> normalize -> Arrow -> the store's writer).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode
from service_tracers import ServiceTracers

from loopsight import attributes as A
from loopsight.ingest.pipeline import spans_to_request
from loopsight.stores import ingest_request
from loopsight.stores.duckdb_store import Store

T0 = datetime(2026, 3, 2, 12, 0, 0)


def ns(at: datetime) -> int:
    return int(at.replace(tzinfo=UTC).timestamp() * 1e9)


@dataclass(frozen=True)
class Call:
    """One tool call of a run."""

    tool: str = "search"
    args: str = "a"
    error_type: str | None = None
    error_class: str | None = None
    duration_ms: float = 20.0
    loop_kind: str | None = None


class Traffic:
    """Build runs and ingest them into ``store``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._tracers = ServiceTracers("tests.alerts")
        self.exporter = self._tracers.exporter
        self._tracer = self._tracers.tracer

    def run(
        self,
        at: datetime,
        calls: list[Call] | tuple[Call, ...] = (Call(),),
        *,
        agent: str = "support",
        service: str = "svc",
        termination: str = "completed",
        tokens: tuple[int, int] = (100, 10),
        finished: bool = True,
    ) -> str:
        """One run starting at ``at``: a chat span and its tool calls per step; returns the trace id."""
        tracer = self._tracer(service)
        root = tracer.start_span(
            f"invoke_agent {agent}",
            start_time=ns(at),
            attributes={A.OPERATION_NAME: A.OP_INVOKE_AGENT, A.AGENT_NAME: agent, A.TERMINATION_REASON: termination},
        )
        ctx = trace.set_span_in_context(root)
        clock = at
        for step, call in enumerate(calls):
            chat = tracer.start_span(
                "chat m",
                context=ctx,
                start_time=ns(clock),
                attributes={
                    A.OPERATION_NAME: A.OP_CHAT,
                    A.REQUEST_MODEL: "m",
                    A.USAGE_INPUT_TOKENS: tokens[0],
                    A.USAGE_OUTPUT_TOKENS: tokens[1],
                    A.STEP: step,
                },
            )
            clock += timedelta(milliseconds=5)
            chat.end(end_time=ns(clock))
            attrs = {
                A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
                A.TOOL_NAME: call.tool,
                A.STEP: step,
                A.TOOL_ARGS_HASH: f"{abs(hash(call.args)) % 16**16:016x}",
            }
            if call.error_class:
                attrs[A.ERROR_CLASS] = call.error_class
            if call.error_type:
                attrs[A.ERROR_TYPE] = call.error_type
            if call.loop_kind:
                attrs[A.LOOP_KIND] = call.loop_kind
            span = tracer.start_span(f"execute_tool {call.tool}", context=ctx, start_time=ns(clock), attributes=attrs)
            if call.error_type:
                span.set_status(Status(StatusCode.ERROR, call.error_type))
            clock += timedelta(milliseconds=call.duration_ms)
            span.end(end_time=ns(clock))
        if finished:
            root.end(end_time=ns(clock + timedelta(milliseconds=1)))
        return format(root.get_span_context().trace_id, "032x")

    def flush(self) -> int:
        """Ingest every span built so far; returns how many were stored."""
        spans = self.exporter.get_finished_spans()
        self.exporter.clear()
        stored = ingest_request(self.store, spans_to_request(spans)) if spans else 0
        drain = getattr(self.store, "drain", None)  # a ClickHouse writer indexes after acknowledging
        if drain is not None:
            drain(60)
        return stored


@dataclass
class Hook:
    """A webhook receiver on 127.0.0.1: records JSON bodies, answers from a script of (status, delay)."""

    url: str
    received: list[dict[str, Any]] = field(default_factory=list)
    attempts: int = 0
    script: list[tuple[int, float]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.received) >= count:
                    return list(self.received)
            time.sleep(0.01)
        raise AssertionError(f"expected {count} notifications, got {len(self.received)}: {self.received}")
