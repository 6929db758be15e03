"""Realistic agent runs emitted with the real OpenTelemetry SDK, for the dashboard tests.

Each run is an ``invoke_agent`` span with ``chat`` and ``execute_tool`` children following
``shared/spec/attributes.md``, timed in the recent past (explicit start/end times, no sleeping).
Scenarios: a clean success, a timeout retried with backoff then an idle gap, an exact loop
stopped by the guard, a fatal permission error, one run whose names and attributes are
hostile text, and a run stuck in flight (its run span never ends, its last child ended
12 minutes ago). On request only: a run repeating one failing call (two loops on the same calls), a tool
failing half of its 12 calls and another failing its only call (for ranking), a run with captured content,
turns of one conversation that repeat a call across its runs, a run on an unpriced model and one whose tool
calls carry no arguments.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

from loopsight import attributes as A

HOSTILE_SCRIPT = "<script>alert(1)</script>"
HOSTILE_LINK = "[click me](http://evil.example/x)"
HOSTILE_AGENT = f"{HOSTILE_SCRIPT}agent [docs](http://evil.example/a) www.evil.example"
MS = 1_000_000


def args_hash(args: dict) -> str:
    return hashlib.sha256(json.dumps(args, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


@dataclass
class Emitted:
    """What was sent: trace ids (hex) by scenario, in emission order (``stuck`` traces have no run span)."""

    traces: dict[str, list[str]] = field(default_factory=dict)

    def first(self, scenario: str) -> str:
        return self.traces[scenario][0]

    @property
    def count(self) -> int:
        """Runs with a run span (stuck traces are not runs yet)."""
        return sum(len(v) for k, v in self.traces.items() if k != "stuck")

    @property
    def run_traces(self) -> list[str]:
        return [t for k, v in self.traces.items() if k != "stuck" for t in v]


class _Run:
    def __init__(self, tracer, agent: str, start_ns: int, session: str | None = None) -> None:
        self.tracer = tracer
        self.agent = agent
        self.now = start_ns
        attributes = {A.OPERATION_NAME: A.OP_INVOKE_AGENT, A.AGENT_NAME: agent, A.BUDGET_MAX_STEPS: 8}
        if session:
            attributes[A.CONVERSATION_ID] = session
        self.root = tracer.start_span(
            f"invoke_agent {agent}", kind=SpanKind.INTERNAL, start_time=start_ns, attributes=attributes
        )
        self.context = set_span_in_context(self.root)

    def chat(self, step: int, input_tokens: int, output_tokens: int, ms: int = 300, extra: dict | None = None) -> None:
        span = self.tracer.start_span(
            "chat gpt-4o",
            kind=SpanKind.CLIENT,
            context=self.context,
            start_time=self.now,
            attributes={
                A.OPERATION_NAME: A.OP_CHAT,
                A.REQUEST_MODEL: "gpt-4o",
                A.STEP: step,
                A.USAGE_INPUT_TOKENS: input_tokens,
                A.USAGE_OUTPUT_TOKENS: output_tokens,
                **(extra or {}),
            },
        )
        self.now += ms * MS
        span.end(end_time=self.now)
        self.now += 5 * MS

    def tool(
        self,
        step: int,
        name: str,
        args: dict | None,
        ms: int = 120,
        *,
        error: str | None = None,
        error_class: str | None = None,
        retries: int = 0,
        loop_kind: str | None = None,
        extra: dict | None = None,
    ) -> None:
        attributes = {
            A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.TOOL_NAME: name,
            A.STEP: step,
            A.TOOL_ATTEMPTS: retries + 1,
            **(extra or {}),
        }
        if args is not None:
            attributes[A.TOOL_ARGS_HASH] = args_hash(args)
        if loop_kind:
            attributes[A.LOOP_KIND] = loop_kind
        span = self.tracer.start_span(
            f"execute_tool {name}",
            kind=SpanKind.INTERNAL,
            context=self.context,
            start_time=self.now,
            attributes=attributes,
        )
        for attempt in range(retries):
            self.now += 400 * MS
            span.add_event(
                A.EVENT_RETRY,
                {A.ERROR_TYPE: "timeout", A.ERROR_CLASS: "transient", A.BACKOFF_MS: 800 * (attempt + 1)},
                timestamp=self.now,
            )
            self.now += 800 * (attempt + 1) * MS
        if loop_kind:
            span.add_event(A.EVENT_LOOP_DETECTED, {A.LOOP_KIND: loop_kind}, timestamp=self.now)
        if error:
            span.set_attribute(A.ERROR_TYPE, error)
            span.set_attribute(A.ERROR_CLASS, error_class or "permanent")
            span.set_status(Status(StatusCode.ERROR, error))
        self.now += ms * MS
        span.end(end_time=self.now)
        self.now += 5 * MS

    def end(self, reason: str, error: str | None = None) -> str:
        self.root.set_attribute(A.TERMINATION_REASON, reason)
        if error:
            self.root.set_attribute(A.ERROR_TYPE, error)
            self.root.set_status(Status(StatusCode.ERROR, error))
        self.root.end(end_time=self.now + 10 * MS)
        return format(self.root.get_span_context().trace_id, "032x")


def _success(run: _Run) -> str:
    run.chat(0, 900, 60)
    run.tool(0, "search_orders", {"customer": "c-17"})
    run.chat(1, 1500, 80)
    run.tool(1, "query_order", {"order_id": "A-1001"}, ms=80)
    run.chat(2, 2300, 120)
    return run.end("completed")


def _retried_timeout(run: _Run) -> str:
    run.chat(0, 1000, 70)
    run.tool(0, "fetch_page", {"url": "https://shop.example/p/1"}, ms=900, retries=2)
    run.now += 2500 * MS  # an idle gap no child span covers
    run.chat(1, 2600, 140)
    return run.end("completed")


def _loop(run: _Run) -> str:
    for step in range(4):
        run.chat(step, 1000 + 1400 * step, 50)
        run.tool(step, "query_order", {"order_id": "B-7"}, loop_kind="exact" if step == 3 else None)
    return run.end("loop_detected", error="loop_detected")


def _error_loop(run: _Run) -> str:
    """The same failing call again and again: one run, two loops (exact and repeated_error) on the same calls."""
    for step in range(4):
        run.chat(step, 1200 + 1000 * step, 40)
        run.tool(
            step,
            "query_order",
            {"order_id": "D-9"},
            error="not_found",
            error_class="permanent",
            loop_kind="exact" if step == 3 else None,
        )
    return run.end("repeated_error", error="repeated_error")


def _fatal(run: _Run) -> str:
    run.chat(0, 800, 40)
    run.tool(0, "refund_order", {"order_id": "C-3"}, error="permission_denied", error_class="fatal")
    return run.end("fatal_error", error="permission_denied")


def _hostile(run: _Run) -> str:
    run.chat(0, 700, 30)
    run.tool(
        0,
        HOSTILE_LINK,
        {"q": HOSTILE_SCRIPT},
        error=HOSTILE_SCRIPT,
        error_class="garbage",
        extra={"note": HOSTILE_LINK, "payload": HOSTILE_SCRIPT, "long": "x" * 5000},
    )
    return run.end("error", error=HOSTILE_LINK)


def _stuck(run: _Run) -> str:
    """In flight: the run span never ends (so is never exported); its last child ended long ago."""
    run.chat(0, 600, 30)
    run.tool(0, "search_orders", {"customer": "c-99"})
    return format(run.root.get_span_context().trace_id, "032x")


def _flaky(run: _Run) -> str:
    """Many calls of one tool, nearly half of them failing (a tool that should rank first among the failing)."""
    for step in range(12):
        run.chat(step, 500 + 10 * step, 20, ms=20)
        failed = step % 2 == 0 and step < 11
        run.tool(
            step,
            "flaky_search",
            {"q": f"item-{step}"},
            ms=15,
            error="upstream_500" if failed else None,
            error_class="transient" if failed else None,
        )
    return run.end("completed")


def _one_failure(run: _Run) -> str:
    """One call of one tool, failed: 100 % of one sample, which must not outrank the flaky tool."""
    run.chat(0, 300, 10, ms=20)
    run.tool(0, "rare_export", {"id": 1}, ms=10, error="bad_request", error_class="permanent")
    return run.end("completed")


def _captured(run: _Run) -> str:
    """A run recorded with content capture on: the messages of its model call, its tool's input and output."""
    run.tool(
        0,
        "query_order",
        {"order_id": "E-5"},
        ms=30,
        extra={
            "gen_ai.tool.call.arguments": json.dumps({"order_id": "E-5"}),
            "gen_ai.tool.call.result": json.dumps({"status": "shipped", "eta": "2026-01-03"}),
        },
    )
    run.chat(
        1,
        400,
        20,
        ms=40,
        extra={
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Where is E-5?"}]}]
            ),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "Shipped, due 3 January."}]}]
            ),
        },
    )
    return run.end("completed")


UNPRICED_MODEL = "house-model-1"


def _unpriced(run: _Run) -> str:
    """A run on a self-hosted model no price table knows: its cost is unknown, never $0."""
    run.chat(0, 500, 20, extra={A.REQUEST_MODEL: UNPRICED_MODEL})
    run.tool(0, "lookup_stock", {"sku": "K-2"}, ms=30)
    run.chat(1, 800, 30, extra={A.REQUEST_MODEL: UNPRICED_MODEL})
    return run.end("completed")


def _no_arguments(run: _Run) -> str:
    """A run whose tool calls were recorded without their arguments (capture off): loops on them cannot be judged."""
    run.chat(0, 400, 20)
    run.tool(0, "lookup_stock", None, ms=30)
    run.chat(1, 600, 20)
    return run.end("completed")


SESSION_ID = "conv-7"


def _session_turn(run: _Run) -> str:
    """One turn of a conversation (``SESSION_ID``) that asks the same order again: three turns are a loop
    across the session's runs (scope ``session``), none a loop of its own."""
    run.chat(0, 600, 30)
    run.tool(0, "query_order", {"order_id": "S-1"}, ms=40)
    run.chat(1, 900, 40)
    return run.end("completed")


SCENARIOS = {
    "success": _success,
    "retried_timeout": _retried_timeout,
    "loop": _loop,
    "fatal": _fatal,
    "hostile": _hostile,
    "stuck": _stuck,
    "error_loop": _error_loop,
    "flaky": _flaky,
    "one_failure": _one_failure,
    "captured": _captured,
    "session_turn": _session_turn,
    "unpriced": _unpriced,
    "no_arguments": _no_arguments,
}
# What emit() sends unless told: every scenario but the extras some tests ask for by name.
DEFAULT_SCENARIOS = ("success", "retried_timeout", "loop", "fatal", "hostile", "stuck")
AGENTS = {
    "success": "order-assistant",
    "retried_timeout": "web-researcher",
    "loop": "order-assistant",
    "fatal": "refund-bot",
    "hostile": HOSTILE_AGENT,
    "stuck": "order-assistant",
    "error_loop": "order-assistant",
    "flaky": "search-bot",
    "one_failure": "export-bot",
    "captured": "order-assistant",
    "session_turn": "support-chat",
    "unpriced": "local-bot",
    "no_arguments": "house-bot",
}
STUCK_MINUTES_AGO = 12


def emit(
    exporter: SpanExporter,
    rounds: int = 2,
    service: str = "shop-agents",
    scenarios: Sequence[str] = DEFAULT_SCENARIOS,
    minutes_ago: float = 30.0,
) -> Emitted:
    """Emit ``rounds`` runs of each scenario through ``exporter``, spread over the last minutes."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("loopsight.tests.dashboard")
    emitted = Emitted()
    start = time.time_ns() - int(minutes_ago * 60 * 1e9)
    total = rounds * len(scenarios)
    i = 0
    for _ in range(rounds):
        for name in scenarios:
            at = start + int(i * (minutes_ago * 60 * 1e9) / max(total, 1))
            if name == "stuck":
                at = time.time_ns() - STUCK_MINUTES_AGO * 60 * 10**9
            session = SESSION_ID if name == "session_turn" else None
            trace_id = SCENARIOS[name](_Run(tracer, AGENTS[name], at, session))
            emitted.traces.setdefault(name, []).append(trace_id)
            i += 1
    provider.shutdown()
    return emitted


def emit_to_collector(url: str, token: str | None = None, **kwargs) -> Emitted:
    """Export through the real OTLP/HTTP exporter to a collector at ``url``."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return emit(OTLPSpanExporter(endpoint=f"{url}/v1/traces", headers=headers, timeout=10), **kwargs)


def in_memory(**kwargs) -> tuple[Emitted, Sequence[ReadableSpan]]:
    """Emit into memory; returns what was emitted and the finished spans."""
    exporter = InMemorySpanExporter()
    emitted = emit(exporter, **kwargs)
    return emitted, exporter.get_finished_spans()
