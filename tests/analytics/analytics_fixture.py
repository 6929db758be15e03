"""Build small stores whose right answers are known by construction.

Runs are written as real OTel SDK spans (explicit start/end times), encoded to OTLP and
ingested through the collector's own pipeline into a real DuckDB file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from service_tracers import ServiceTracers

from loopsight import attributes as A
from loopsight.ingest.pipeline import spans_to_request
from loopsight.stores import ingest_request
from loopsight.stores.duckdb_store import Store

T0 = datetime(2026, 1, 10)


def ns(at: datetime) -> int:
    """Naive-UTC datetime -> Unix nanoseconds."""
    return int(at.replace(tzinfo=UTC).timestamp() * 1_000_000) * 1000


@dataclass
class Call:
    """One tool call inside a step."""

    tool: str
    args_hash: str = "a1"
    error_class: str | None = None
    error_type: str = "boom"
    attempts: int = 1
    duration_ms: float = 10.0
    loop_kind: str | None = None


@dataclass
class Step:
    """One model turn: a chat span and the tool calls it asked for."""

    input_tokens: int | None  # None: the model span carries no token count
    output_tokens: int | None
    calls: list[Call] = field(default_factory=list)
    chat_ms: float = 5.0
    sub_agent: str | None = None


@dataclass
class RunInfo:
    """What the test knows about a recorded run."""

    trace_id: str
    run_id: str
    duration_ms: float
    tokens: int


def quantile(values: list[float], q: float) -> float:
    """Linear-interpolation quantile, the same definition as DuckDB's quantile_cont."""
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


class Recorder:
    """Records runs as OTel spans, one TracerProvider per service, all into one exporter."""

    def __init__(self) -> None:
        self._tracers = ServiceTracers("tests.analytics")
        self.exporter = self._tracers.exporter
        self._tracer = self._tracers.tracer

    def run(
        self,
        *,
        agent: str,
        start: datetime,
        steps: list[Step],
        termination: str = "completed",
        error: bool = False,
        service: str = "svc-a",
        tail_ms: float = 1.0,
    ) -> RunInfo:
        """Record one run; children run back to back from ``start``; returns its ids."""
        tracer = self._tracer(service)
        root = tracer.start_span(
            f"invoke_agent {agent}",
            start_time=ns(start),
            attributes={A.OPERATION_NAME: A.OP_INVOKE_AGENT, A.AGENT_NAME: agent, A.TERMINATION_REASON: termination},
        )
        at = start
        for index, step in enumerate(steps):
            parent = root
            if step.sub_agent:
                parent = tracer.start_span(
                    f"invoke_agent {step.sub_agent}",
                    context=trace.set_span_in_context(root),
                    start_time=ns(at),
                    attributes={A.OPERATION_NAME: A.OP_INVOKE_AGENT, A.AGENT_NAME: step.sub_agent},
                )
            context = trace.set_span_in_context(parent)
            chat = tracer.start_span(
                "chat gpt-test",
                context=context,
                kind=SpanKind.CLIENT,
                start_time=ns(at),
                attributes={
                    A.OPERATION_NAME: A.OP_CHAT,
                    A.REQUEST_MODEL: "gpt-test",
                    A.STEP: index,
                    **({A.USAGE_INPUT_TOKENS: step.input_tokens} if step.input_tokens is not None else {}),
                    **({A.USAGE_OUTPUT_TOKENS: step.output_tokens} if step.output_tokens is not None else {}),
                },
            )
            at += timedelta(milliseconds=step.chat_ms)
            chat.end(end_time=ns(at))
            for call in step.calls:
                attrs: dict[str, str | int] = {
                    A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
                    A.TOOL_NAME: call.tool,
                    A.TOOL_ARGS_HASH: call.args_hash,
                    A.STEP: index,
                    A.TOOL_ATTEMPTS: call.attempts,
                }
                if call.loop_kind:
                    attrs[A.LOOP_KIND] = call.loop_kind
                span = tracer.start_span(
                    f"execute_tool {call.tool}", context=context, start_time=ns(at), attributes=attrs
                )
                for attempt in range(call.attempts - 1):
                    span.add_event(
                        A.EVENT_RETRY,
                        {A.ERROR_TYPE: "timeout", A.ERROR_CLASS: "transient", A.BACKOFF_MS: 100 * (attempt + 1)},
                        timestamp=ns(at + timedelta(microseconds=attempt + 1)),
                    )
                if call.loop_kind:
                    span.add_event(A.EVENT_LOOP_DETECTED, {A.LOOP_KIND: call.loop_kind}, timestamp=ns(at))
                if call.error_class:
                    span.set_attributes({A.ERROR_TYPE: call.error_type, A.ERROR_CLASS: call.error_class})
                    span.set_status(Status(StatusCode.ERROR, call.error_type))
                at += timedelta(milliseconds=call.duration_ms)
                span.end(end_time=ns(at))
            if parent is not root:
                parent.end(end_time=ns(at))
        at += timedelta(milliseconds=tail_ms)
        if error:
            root.set_status(Status(StatusCode.ERROR, "run failed"))
        root.end(end_time=ns(at))
        ctx = root.get_span_context()
        tokens = sum((step.input_tokens or 0) + (step.output_tokens or 0) for step in steps)
        duration_ms = (at - start) / timedelta(milliseconds=1)
        return RunInfo(format(ctx.trace_id, "032x"), format(ctx.span_id, "016x"), duration_ms, tokens)

    def ingest(self, store: Store) -> int:
        """Send everything recorded so far through the collector's ingest pipeline."""
        spans = self.exporter.get_finished_spans()
        self.exporter.clear()
        return ingest_request(store, spans_to_request(spans)) if spans else 0
