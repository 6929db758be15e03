"""``loopsight demo``: run the scenario pack with real (scaled) delays and export the spans.

Example:
    >>> summary = run_scenarios(runs=3, seed=1, concurrency=3, speed=400)   # spans go to the configured provider
    >>> summary.runs
    3
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.util.re import parse_env_headers

import loopsight
from loopsight import attributes as A
from loopsight.config import traces_url
from loopsight.errors import LoopsightError
from loopsight.instrumentation.setup import otlp_exporter, otlp_protocol
from loopsight.instrumentation.state import STATE
from loopsight.react.result import RunResult
from loopsight.react.scenarios import FIRST, REQUIRED, SCENARIOS, Scenario, plan

DEFAULT_ENDPOINT = "http://127.0.0.1:4318"
CRASHED_MINUTES_AGO = 10.0
ASKED_AGAIN = 3
"""In a full pack one customer asks where their order is this many times in one conversation: each
run alone is fine, the session repeats the same lookups (a loop across a session's runs)."""
CONVERSING = ("order-assistant", "support-triage", "billing-agent")
"""The agents customers talk to: their runs come in conversations of two (the Sessions page)."""
DEMO_RULES = Path(__file__).with_name("demo_rules.toml")
"""The alert rules ``loopsight up --demo`` loads: the demo's loops fire one, its crashed worker
(:func:`crashed_worker`) fires the other, which resolves as that run ages out of its window."""


def crashed_worker(minutes_ago: float = CRASHED_MINUTES_AGO) -> str:
    """Emit the spans a worker sent before it died ``minutes_ago``: a model call and a tool call
    whose run span never ends (so is never exported). The Stalls page lists it as ``stuck``.

    Returns the trace id (hex). Timestamps are explicit: the spans say when they ran.

    Example:
        >>> trace_id = crashed_worker(10)   # doctest: +SKIP
    """
    tracer = STATE.tracer()
    start = STATE.clock() - int(minutes_ago * 60e9) - 4 * 10**9  # loopsight's clock (a test's fake one too)
    run = tracer.start_span(
        "invoke_agent ops-agent",
        start_time=start,
        attributes={A.OPERATION_NAME: "invoke_agent", A.AGENT_NAME: "ops-agent"},
    )
    with trace.use_span(run, end_on_exit=False):
        chat = tracer.start_span(
            "chat claude-3-5-haiku",
            start_time=start + 10**8,
            attributes={
                A.OPERATION_NAME: "chat",
                A.REQUEST_MODEL: "claude-3-5-haiku",
                A.PROVIDER_NAME: "anthropic",
                A.STEP: 0,
                A.CONTEXT_MODE: "normal",
                A.USAGE_INPUT_TOKENS: 640,
                A.USAGE_OUTPUT_TOKENS: 24,
            },
        )
        chat.end(end_time=start + 12 * 10**8)
        tool = tracer.start_span(
            "execute_tool get_metrics",
            start_time=start + 13 * 10**8,
            attributes={A.OPERATION_NAME: "execute_tool", A.TOOL_NAME: "get_metrics", A.STEP: 0},
        )
        tool.end(end_time=start + 4 * 10**9)
    return format(run.get_span_context().trace_id, "032x")  # the worker died: ``run`` is never ended


@dataclass
class DemoSummary:
    """What a demo sent: runs per termination reason, agent, fallback, error class and loop kind."""

    runs: int = 0
    duration_s: float = 0.0
    endpoint: str | None = None
    by_reason: Counter[str] = field(default_factory=Counter)
    by_agent: Counter[str] = field(default_factory=Counter)
    by_scenario: Counter[str] = field(default_factory=Counter)
    by_fallback: Counter[str] = field(default_factory=Counter)
    error_classes: Counter[str] = field(default_factory=Counter)
    loop_kinds: Counter[str] = field(default_factory=Counter)
    context_modes: Counter[str] = field(default_factory=Counter)
    tool_calls: int = 0
    retries: int = 0
    tokens: int = 0
    stuck: int = 0  # crashed workers: runs left in flight (no run span)

    def add(self, scenario: str, agent: str, result: RunResult | None) -> None:
        """Count one run (``result`` None: the user cancelled it)."""
        self.runs += 1
        self.by_scenario[scenario] += 1
        self.by_agent[agent] += 1
        if result is None:
            self.by_reason["cancelled"] += 1
            return
        s = result.summary
        self.by_reason[result.termination_reason] += 1
        if result.fallback:
            self.by_fallback[result.fallback] += 1
        self.error_classes.update(s.error_classes)
        self.loop_kinds.update(s.loop_kinds)
        self.context_modes.update(s.context_modes)
        self.tool_calls += s.tool_calls
        self.retries += s.retries
        self.tokens += s.total_tokens

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "runs": self.runs,
            "duration_s": round(self.duration_s, 3),
            "endpoint": self.endpoint,
            "by_reason": dict(self.by_reason),
            "by_agent": dict(self.by_agent),
            "by_fallback": dict(self.by_fallback),
            "error_classes": dict(self.error_classes),
            "loop_kinds": dict(self.loop_kinds),
            "context_modes": dict(self.context_modes),
            "tool_calls": self.tool_calls,
            "retries": self.retries,
            "tokens": self.tokens,
            "stuck": self.stuck,
        }

    def __str__(self) -> str:
        def fmt(c: Counter[str]) -> str:
            return ", ".join(f"{k} {v}" for k, v in c.most_common()) or "none"

        where = f" to {self.endpoint}" if self.endpoint else ""
        return "\n".join(
            [
                f"demo: {self.runs} runs in {self.duration_s:.1f} s{where}",
                f"  termination: {fmt(self.by_reason)}",
                f"  agents:      {fmt(self.by_agent)}",
                f"  fallbacks:   {fmt(self.by_fallback)}",
                f"  errors:      {fmt(self.error_classes)}",
                f"  loops:       {fmt(self.loop_kinds)}",
                f"  context:     {fmt(self.context_modes)}",
                f"  tool calls {self.tool_calls}, retries {self.retries}, tokens {self.tokens}, stuck in flight {self.stuck}",
            ]
        )

    def __rich__(self) -> str:
        return str(self).replace("[", r"\[")


Job = tuple[Scenario, random.Random]


def conversations(jobs: list[Job], seed: int) -> list[tuple[str | None, list[Job], bool]]:
    """The jobs as conversations: ``(conversation id or None, jobs, one after another)``.

    The customer-facing agents' runs (:data:`CONVERSING`) pair up in plan order; in a full pack the
    first :data:`ASKED_AGAIN` runs drawn beyond the required ones become one customer asking the
    same question again and again, each run after the last one's answer.

    Example:
        >>> rng = random.Random(1)
        >>> talks = conversations([(s, random.Random(rng.random())) for s in plan(40, seed=1)], seed=1)
        >>> sum(len(jobs) for _, jobs, _ in talks), [len(jobs) for _, jobs, again in talks if again]
        (40, [3])
    """
    prefix = os.urandom(4).hex()  # a new conversation each invocation, whatever the seed
    jobs = list(jobs)
    out: list[tuple[str | None, list[Job], bool]] = []
    drawn = [i for i, (s, _) in enumerate(jobs) if s.name not in REQUIRED]
    if len(jobs) >= len(REQUIRED) + ASKED_AGAIN and len(drawn) >= ASKED_AGAIN:
        same = random.Random(seed).random()  # the same order, the same answers
        again = [(SCENARIOS["order_status"], random.Random(same)) for _ in range(ASKED_AGAIN)]
        for i in reversed(drawn[:ASKED_AGAIN]):
            del jobs[i]
    else:
        again = []
    waiting: dict[str, Job] = {}
    for n, job in enumerate(jobs):
        agent = job[0].agent
        if agent not in CONVERSING or job[0].name in FIRST:  # the real-time stalls start first, alone
            out.append((None, [job], False))
        elif agent in waiting:
            out.append((f"demo-{prefix}-{n}", [waiting.pop(agent), job], False))
        else:
            waiting[agent] = job
    out += [(f"demo-{prefix}-{agent}", [job], False) for agent, job in waiting.items()]
    if again:
        out.append((f"demo-{prefix}-again", again, True))
    return out


async def arun_scenarios(runs: int = 40, seed: int = 7, concurrency: int = 4, speed: float = 20.0) -> DemoSummary:
    """Run ``runs`` scenarios, ``concurrency`` at a time, in the current event loop (in
    :func:`conversations`)."""
    if concurrency < 1 or speed <= 0:
        raise ValueError("concurrency must be >= 1 and speed > 0")
    summary = DemoSummary()
    gate = asyncio.Semaphore(concurrency)
    rng = random.Random(seed)
    jobs = [(s, random.Random(rng.random())) for s in plan(runs, seed)]
    started = time.monotonic()

    async def one(scenario: Any, run_rng: random.Random, conversation: str | None) -> None:
        async with gate:
            built = scenario.build(run_rng, speed)
            try:
                result = await asyncio.wait_for(
                    built.agent.arun(built.task, conversation_id=conversation), built.patience
                )
            except TimeoutError:
                result = None  # the user hung up: the run span ends as cancelled
            summary.add(scenario.name, built.agent.name, result)

    async def talk(conversation: str | None, members: list[Job], in_turn: bool) -> None:
        if in_turn:  # each question after the last answer
            for scenario, run_rng in members:
                await one(scenario, run_rng, conversation)
        else:
            await asyncio.gather(*(one(s, r, conversation) for s, r in members))

    await asyncio.gather(*(talk(*c) for c in conversations(jobs, seed)))
    if runs >= len(REQUIRED):  # a full pack: one run stuck in flight too (not in the follow-up batches)
        crashed_worker()
        summary.stuck += 1
    summary.duration_s = time.monotonic() - started
    return summary


def run_scenarios(runs: int = 40, seed: int = 7, concurrency: int = 4, speed: float = 20.0) -> DemoSummary:
    """Blocking :func:`arun_scenarios`; spans go wherever loopsight is configured (or a test fixture)."""
    return asyncio.run(arun_scenarios(runs, seed, concurrency, speed))


class ExportFailed(LoopsightError, RuntimeError):
    """The demo's spans did not reach the collector; the message names the endpoint and why."""


class _Delivery(SpanExporter):
    """Hands batches to ``inner`` and counts the spans it delivered and the spans it lost."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.sent = 0
        self.lost = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = SpanExportResult.FAILURE
        try:
            result = self.inner.export(spans)
            return result
        finally:
            if result is SpanExportResult.SUCCESS:
                self.sent += len(spans)
            else:
                self.lost += len(spans)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _export_headers(token: str | None) -> dict[str, str]:
    """``OTEL_EXPORTER_OTLP_(TRACES_)HEADERS``, with ``Authorization: Bearer <token>`` when given."""
    raw = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or os.environ.get("OTEL_EXPORTER_OTLP_HEADERS")
    headers = dict(parse_env_headers(raw, liberal=True)) if raw else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _refusal(url: str, headers: Mapping[str, str]) -> str | None:
    """Why ``url`` does not take an empty OTLP/HTTP export request, or None when it takes one."""
    import httpx

    try:
        response = httpx.post(
            url, content=b"", headers={**headers, "Content-Type": "application/x-protobuf"}, timeout=10
        )
    except httpx.HTTPError as exc:
        return f"cannot connect ({exc or type(exc).__name__})"
    if response.is_success:
        return None
    hint = (
        " (missing or wrong token: pass the collector's with --token or LOOPSIGHT_TOKEN)"
        if response.status_code == 401
        else ""
    )
    return f"it answered {response.status_code} {response.reason_phrase}: {response.text.strip()[:200]}{hint}"


def run_demo(
    endpoint: str | None = None,
    runs: int = 40,
    seed: int = 7,
    concurrency: int = 4,
    speed: float = 20.0,
    service_name: str = "loopsight-demo",
    token: str | None = None,
) -> DemoSummary:
    """Configure the OTLP exporter, run the scenario pack, flush, and summarise.

    ``endpoint`` None means ``OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT``, else
    ``LOOPSIGHT_ENDPOINT``, else ``http://127.0.0.1:4318``. ``token`` is sent as
    ``Authorization: Bearer <token>``.

    Raises :class:`ExportFailed` when an OTLP/HTTP endpoint refuses an empty export request
    (checked before the runs), or when any span was not delivered.

    Example:
        >>> summary = run_demo("http://127.0.0.1:4318", runs=40)   # doctest: +SKIP
        >>> print(summary)                                         # doctest: +SKIP
        demo: 40 runs in 6.1 s to http://127.0.0.1:4318
          termination: completed 27, ...
    """
    otel_env = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if endpoint is None and not otel_env:
        endpoint = os.environ.get("LOOPSIGHT_ENDPOINT") or DEFAULT_ENDPOINT
    protocol = otlp_protocol()
    headers = _export_headers(token)
    http = protocol == "http/protobuf"
    where: str
    if not http:
        where = endpoint or otel_env or DEFAULT_ENDPOINT
    elif endpoint:
        where = traces_url(endpoint)
    else:  # the exporter takes the traces variable as the whole URL, the general one as a base
        where = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or traces_url(otel_env or DEFAULT_ENDPOINT)
    if http and (reason := _refusal(where, headers)):
        raise ExportFailed(f"cannot send spans to {where}: {reason}")
    delivery = _Delivery(otlp_exporter(protocol, endpoint, headers if token else None))
    loopsight.configure(service_name=service_name, exporter=delivery)
    try:
        summary = run_scenarios(runs, seed, concurrency, speed)
    finally:
        loopsight.shutdown()
    if delivery.lost:
        reason = (_refusal(where, headers) if http else None) or "see the exporter's messages above"
        raise ExportFailed(f"{delivery.lost} of {delivery.lost + delivery.sent} spans did not reach {where}: {reason}")
    summary.endpoint = endpoint or otel_env
    return summary
