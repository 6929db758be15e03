"""Fixture spans made with the real OTel SDK: every vocabulary, errors, retries, loops, sub-agents.

The same finished spans fill a DuckDB store (through the collector's ingest) and a
ClickHouse ``otel_traces`` table (as the contrib exporter writes them), so the two stores
can be asked the same questions.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import SpanKind, Status, StatusCode

BASE = datetime(2025, 3, 1, 9, 0, 0, tzinfo=UTC)
BASE_NS = int(BASE.timestamp()) * 1_000_000_000
MS = 1_000_000


class SeededIds(IdGenerator):
    """Deterministic ids so both stores (and reruns) see the same traces."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def generate_span_id(self) -> int:
        return self._rng.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self._rng.getrandbits(128) or 1


class Builder:
    """Spans at explicit times (ms after ``BASE`` + offset) on one tracer per service."""

    def __init__(self, seed: int = 7) -> None:
        self.exporter = InMemorySpanExporter()
        self._ids = SeededIds(seed)
        self._providers: dict[str, TracerProvider] = {}

    def tracer(self, service: str) -> trace.Tracer:
        if service not in self._providers:
            provider = TracerProvider(
                resource=Resource.create({"service.name": service, "deployment.environment": "test"}),
                id_generator=self._ids,
            )
            provider.add_span_processor(SimpleSpanProcessor(self.exporter))
            self._providers[service] = provider
        return self._providers[service].get_tracer("loopsight.fixture", "1.0")

    @contextmanager
    def span(
        self,
        service: str,
        name: str,
        start_ms: float,
        end_ms: float,
        attrs: dict[str, Any] | None = None,
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        error: str | None = None,
        events: list[tuple[str, float, dict[str, Any]]] = (),  # type: ignore[assignment]
    ) -> Iterator[trace.Span]:
        tracer = self.tracer(service)
        span = tracer.start_span(name, kind=kind, attributes=attrs or {}, start_time=BASE_NS + int(start_ms * MS))
        with trace.use_span(span, end_on_exit=False):
            yield span
        for event_name, at_ms, event_attrs in events:
            span.add_event(event_name, event_attrs, timestamp=BASE_NS + int(at_ms * MS))
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=BASE_NS + int(end_ms * MS))

    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())


def _agent(name: str, reason: str | None = "completed", **extra: Any) -> dict[str, Any]:
    attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **extra}
    if reason is not None:
        attrs["loopsight.termination.reason"] = reason
    return attrs


def _chat(step: int, model: str, tokens_in: int, tokens_out: int, **extra: Any) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "loopsight.step": step,
        "gen_ai.usage.input_tokens": tokens_in,
        "gen_ai.usage.output_tokens": tokens_out,
        **extra,
    }


def _tool(step: int, tool: str, args: dict[str, Any], **extra: Any) -> dict[str, Any]:
    import hashlib

    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"))
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "loopsight.step": step,
        "loopsight.tool.args_hash": hashlib.sha256(canonical.encode()).hexdigest()[:16],
        **extra,
    }


def build(seed: int = 7, runs_per_agent: int = 3) -> list[ReadableSpan]:
    """The fixture: a few hand-made traces per vocabulary, repeated over two hours."""
    b = Builder(seed)
    for i in range(runs_per_agent):
        t0 = i * 2_400_000.0  # 40 minutes apart
        _genai_run(b, t0, i)
        _looping_run(b, t0 + 60_000, i)
        _openinference_run(b, t0 + 120_000, i)
        _langfuse_run(b, t0 + 180_000, i)
        _traceloop_and_http_root(b, t0 + 240_000, i)
        _paraphrasing_run(b, t0 + 300_000, i)
    _stuck_run(b, runs_per_agent * 2_400_000.0)
    _session_runs(b, runs_per_agent * 2_400_000.0 + 60_000)
    return b.finished()


def _session_runs(b: Builder, t0: float) -> None:
    """Two runs of one conversation, each looking the order up and tracking it: a loop across the
    session (an oscillation no single run shows), plus a no_progress run (the same page for three urls)."""
    s = "support"
    for n in range(2):
        start = t0 + n * 30_000
        attrs = _agent("concierge", "completed", **{"gen_ai.conversation.id": "sess-fixture"})
        with b.span(s, "invoke_agent concierge", start, start + 5_000, attrs):
            for step, tool in enumerate(("lookup_order", "track_package")):
                at = start + 100 + step * 2_000
                with b.span(
                    s, "chat gpt-4o", at, at + 500, _chat(step, "gpt-4o", 200 + 50 * n, 10), kind=SpanKind.CLIENT
                ):
                    pass
                with b.span(s, f"execute_tool {tool}", at + 600, at + 900, _tool(step, tool, {"order_id": "A-1001"})):
                    pass
    wall = "<html><body><h1>Sign in to continue</h1><p>Subscribers only: log in or create an account.</p></body></html>"
    start = t0 + 90_000
    with b.span(s, "invoke_agent reader", start, start + 8_000, _agent("reader", "completed")):
        for step, url in enumerate(
            ("https://news.example/a", "https://news.example/a?amp=1", "https://m.news.example/a")
        ):
            at = start + 100 + step * 2_000
            with b.span(s, "chat gpt-4o", at, at + 500, _chat(step, "gpt-4o", 300, 10), kind=SpanKind.CLIENT):
                pass
            attrs = {"gen_ai.tool.call.arguments": json.dumps({"url": url}), "gen_ai.tool.call.result": wall}
            with b.span(
                s, "execute_tool fetch_page", at + 600, at + 900, _tool(step, "fetch_page", {"url": url}, **attrs)
            ):
                pass


def _stuck_run(b: Builder, t0: float) -> None:
    """A run whose agent span never ends (the process hung): its model and tool calls arrive, the
    run span does not."""
    s = "research"
    agent = b.tracer(s).start_span(
        "invoke_agent hung", attributes=_agent("hung", None), start_time=BASE_NS + int(t0 * MS)
    )
    with trace.use_span(agent, end_on_exit=False):
        with b.span(s, "chat gpt-4o", t0 + 10, t0 + 400, _chat(0, "gpt-4o", 50, 5), kind=SpanKind.CLIENT):
            pass
        with b.span(s, "execute_tool web_search", t0 + 410, t0 + 900, _tool(0, "web_search", {"q": "status"})):
            pass


def _genai_run(b: Builder, t0: float, i: int) -> None:
    s = "shop"
    with b.span(s, "invoke_agent order-assistant", t0, t0 + 9_000, _agent("order-assistant", budget_marker(i))):
        with b.span(s, "chat gpt-4o", t0 + 10, t0 + 1_500, _chat(0, "gpt-4o", 1_000 + i, 40), kind=SpanKind.CLIENT):
            pass
        with b.span(
            s,
            "execute_tool query_order",
            t0 + 1_510,
            t0 + 1_900,
            _tool(0, "query_order", {"order_id": f"A{i}"}, **{"loopsight.tool.attempts": 1}),
        ):
            pass
        with b.span(
            s,
            "chat gpt-4o",
            t0 + 2_000,
            t0 + 3_500,
            _chat(1, "gpt-4o", 1_800 + i, 60, **{"loopsight.context.mode": "normal"}),
            kind=SpanKind.CLIENT,
        ):
            pass
        with b.span(
            s,
            "execute_tool search",
            t0 + 3_510,
            t0 + 7_000,
            _tool(
                1,
                "search",
                {"q": "status", "page": 1},
                **{"error.type": "timeout", "loopsight.error.class": "transient", "loopsight.tool.attempts": 3},
            ),
            error="timed out after 3 attempts",
            events=[
                (
                    "retry",
                    t0 + 4_500,
                    {"error.type": "timeout", "loopsight.error.class": "transient", "loopsight.backoff_ms": 500},
                ),
                (
                    "retry",
                    t0 + 5_900,
                    {"error.type": "timeout", "loopsight.error.class": "transient", "loopsight.backoff_ms": 1000},
                ),
            ],
        ):
            pass
        with b.span(s, "chat gpt-4o", t0 + 7_100, t0 + 8_900, _chat(2, "gpt-4o", 2_600 + i, 120), kind=SpanKind.CLIENT):
            pass


def budget_marker(i: int) -> str:
    return ("completed", "max_steps", "completed")[i % 3]


def _looping_run(b: Builder, t0: float, i: int) -> None:
    s = "research"
    run_attrs = _agent("researcher", "loop_detected", **{"loopsight.budget.max_steps": 8})
    with b.span(s, "invoke_agent researcher", t0, t0 + 20_000, run_attrs, error="loop detected"):
        for step in range(3):
            base = t0 + step * 5_000
            with b.span(
                s,
                "chat claude-sonnet",
                base + 10,
                base + 1_000,
                _chat(step, "claude-sonnet", 500 * (step + 1) ** 2, 25),
                kind=SpanKind.CLIENT,
            ):
                pass
            extra = {"loopsight.loop.kind": "exact"} if step == 2 else {}
            events = [("loop_detected", base + 1_400, {"loopsight.loop.kind": "exact"})] if step == 2 else []
            with b.span(
                s,
                "execute_tool search",
                base + 1_010,
                base + 1_500,
                _tool(step, "search", {"q": "same question"}, **extra),
                events=events,
            ):
                pass
        with (
            b.span(s, "invoke_agent summarizer", t0 + 16_000, t0 + 19_000, _agent("summarizer", "completed")),
            b.span(
                s,
                "chat claude-haiku",
                t0 + 16_100,
                t0 + 18_000,
                _chat(3, "claude-haiku", 300, 80 + i),
                kind=SpanKind.CLIENT,
            ),
        ):
            pass


def _paraphrasing_run(b: Builder, t0: float, i: int) -> None:
    """Raw arguments only, reworded each call: a semantic loop found by the argument features (no guard record)."""
    s = "research"
    queries = (
        "refund policy for 2024 orders",
        "orders 2024 refund policy",
        "Refund polciy for 2024 orders?",
        "shipping times to Berlin",
    )
    with b.span(s, "invoke_agent rephraser", t0, t0 + 9_000, _agent("rephraser", "completed")):
        for step, query in enumerate(queries):
            base = t0 + step * 2_000
            with b.span(
                s,
                "chat gpt-4o-mini",
                base + 10,
                base + 800,
                _chat(step, "gpt-4o-mini", 400 + i, 20),
                kind=SpanKind.CLIENT,
            ):
                pass
            with b.span(
                s,
                "execute_tool web_search",
                base + 810,
                base + 1_500,
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "web_search",
                    "loopsight.step": step,
                    "gen_ai.tool.call.arguments": json.dumps({"query": query, "limit": 5}),
                },
            ):
                pass


def _openinference_run(b: Builder, t0: float, i: int) -> None:
    s = "oi-service"
    with b.span(s, "Agent", t0, t0 + 6_000, {"openinference.span.kind": "AGENT", "agent.name": "oi-agent"}):
        with b.span(
            s,
            "ChatCompletion",
            t0 + 5,
            t0 + 2_000,
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                "llm.token_count.prompt": 700 + i,
                "llm.token_count.completion": 33,
                "input.value": "hello",
            },
        ):
            pass
        # Raw arguments with unsorted keys and spaces: both stores must hash the canonical JSON.
        with b.span(
            s,
            "lookup",
            t0 + 2_100,
            t0 + 2_600,
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "lookup",
                "input.value": f'{{"sku": "X-{i}", "count" : 2}}',
            },
        ) as tool_span:
            tool_span.add_event(
                "exception",
                {"exception.type": "ValueError", "exception.message": "bad sku"},
                timestamp=BASE_NS + int((t0 + 2_500) * MS),
            )
            tool_span.set_status(Status(StatusCode.ERROR))
        with b.span(
            s,
            "fetch",
            t0 + 2_700,
            t0 + 3_000,
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "fetch",
                "tool.parameters": "not json at all",
            },
            error="HTTP 404 not found",
        ):
            pass


def _langfuse_run(b: Builder, t0: float, i: int) -> None:
    s = "lf-service"
    with b.span(s, "planner", t0, t0 + 4_000, {"langfuse.observation.type": "agent"}):
        with b.span(
            s,
            "generation",
            t0 + 10,
            t0 + 1_000,
            {
                "langfuse.observation.type": "generation",
                "langfuse.observation.model.name": "mistral-large",
                "langfuse.observation.usage_details": json.dumps({"input": 250 + i, "output": "12"}),
            },
        ):
            pass
        with b.span(
            s,
            "web_fetch",
            t0 + 1_100,
            t0 + 3_900,
            {
                "langfuse.observation.type": "tool",
                "langfuse.observation.level": "ERROR",
            },
            error="HTTP 429 Too Many Requests",
        ):
            pass


def _traceloop_and_http_root(b: Builder, t0: float, i: int) -> None:
    s = "gateway"
    with (
        b.span(s, "POST /ask", t0, t0 + 5_000, {"http.request.method": "POST"}, kind=SpanKind.SERVER),
        b.span(
            s,
            "support.workflow",
            t0 + 5,
            t0 + 4_900,
            {"traceloop.span.kind": "agent", "traceloop.entity.name": "support-bot"},
        ),
    ):
        with b.span(
            s,
            "openai.chat",
            t0 + 10,
            t0 + 1_000,
            {
                "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.prompt_tokens": 90,
                "gen_ai.usage.completion_tokens": 9 + i,
            },
            kind=SpanKind.CLIENT,
        ):
            pass
        with b.span(
            s,
            "kb.search",
            t0 + 1_100,
            t0 + 1_300,
            {
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": "kb_search",
                "traceloop.entity.input": '{"query":"refund","k":3}',
            },
        ):
            pass
        with b.span(
            s,
            "forbidden.call",
            t0 + 1_400,
            t0 + 1_500,
            {"traceloop.span.kind": "tool", "traceloop.entity.name": "admin"},
            error="403 Forbidden",
        ):
            pass
    with b.span(s, "background", t0 + 100, t0 + 200, {"gen_ai.tool.name": "cache_warm"}):
        pass
