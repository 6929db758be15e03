"""A labelled corpus of agent runs for measuring loopsight's detectors, and the scorer.

Every run is built from a scenario whose ground truth follows the definitions in
``docs/detection.md`` (loops: exact, oscillation, repeated_error, semantic; hard
negatives: pagination, one retry of a transient failure, different questions; stalls:
slow calls against a natural latency spread, retry backoff, idle gaps, stuck runs; burn:
linear, superlinear and compressing agents). Each run is emitted with real OTel SDK spans
in one of four vocabularies (loopsight's own attributes, OpenInference, Traceloop and plain
OTel GenAI, the foreign ones with no ``loopsight.*`` attribute), encoded to OTLP and
ingested through the collector's ingest path into a real DuckDB file.

Reproduce the figures in docs/detection.md::

    .venv/bin/python tests/detection/detection_corpus.py --db /tmp/corpus.duckdb
"""

from __future__ import annotations

import argparse
import json
import math
import random
import string
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from loopsight.analytics.burn import burn
from loopsight.analytics.loops import loop_run_ids
from loopsight.analytics.stalls import MIN_BACKOFF_MS, stalls
from loopsight.hashing import args_hash, canonical_json
from loopsight.ingest.pipeline import spans_to_request
from loopsight.results import result_hash
from loopsight.stores import ingest_request
from loopsight.stores.duckdb_store import DuckDBReader, Store

VOCABULARIES = ("loopsight", "openinference", "traceloop", "genai")
LOOP_KINDS = ("exact", "oscillation", "repeated_error", "semantic")
STALL_KINDS = ("slow_call", "backoff", "idle_gap", "stuck")
SCENARIOS = ("normal", "pagination", "single_retry", "dissimilar", "exact", "oscillation", "repeated_error", "semantic")
BASE = datetime(2026, 1, 5, 8, 0, 0)
RUN_SPACING_S = 90
STUCK_AFTER_S = 300
MODEL = "gpt-4o"

# Natural latency per tool: lognormal median (ms) and sigma.
LATENCY = {
    "search": (420.0, 0.35),
    "fetch_page": (900.0, 0.4),
    "list_orders": (150.0, 0.3),
    "query_order": (120.0, 0.3),
    "kb_lookup": (80.0, 0.35),
    "weather": (300.0, 0.3),
    "calculator": (6.0, 0.4),
}
TOPICS = [
    "refund policy for damaged items",
    "shipping times to canada",
    "reset my account password",
    "best running shoes for flat feet",
    "cheap flights from london to new york",
    "kubernetes pod crashloopbackoff fix",
    "python list comprehension examples",
    "warranty terms espresso machine",
    "cancel my monthly subscription",
    "gift card balance check",
    "international return label printing",
    "change delivery address after dispatch",
    "loyalty points expiry rules",
    "store opening hours sunday",
    "vegan protein powder reviews",
    "noise cancelling headphones comparison",
    "mortgage interest deduction rules",
    "symptoms of vitamin d deficiency",
    "sourdough starter troubleshooting",
    "electric bike battery range",
    "how to repot a monstera plant",
    "postgres index bloat cleanup",
    "learn spanish verb conjugation",
    "child car seat installation guide",
    "laptop overheating while charging",
    "wedding speech opening lines",
    "rust borrow checker lifetime errors",
    "solar panel installation cost",
    "marathon training plan beginner",
    "sleep apnea treatment options",
]
CITIES = [
    "paris",
    "berlin",
    "tokyo",
    "madrid",
    "toronto",
    "sydney",
    "chicago",
    "lisbon",
    "oslo",
    "nairobi",
    "lima",
    "seoul",
]
ENTITY_TEMPLATES = [
    "weather forecast {c}",
    "flights to {c} next week",
    "hotels in {c} under budget",
    "museums open late in {c}",
]
URLS = [
    f"https://docs.example.com/{slug}"
    for slug in ("returns", "shipping", "warranty", "billing", "accounts", "api", "faq", "status")
]
FILLER_STOP = ["the", "for", "please", "what is", "about"]


@dataclass
class Call:
    tool: str
    args: dict[str, Any] | str
    duration_ms: float
    error: str | None = None
    error_class: str | None = None
    backoffs_ms: list[float] = field(default_factory=list)
    guard: str | None = None
    slow: bool = False
    result: str | None = None


@dataclass
class Step:
    input_tokens: int
    output_tokens: int
    llm_ms: float
    gap_ms: float
    calls: list[Call] = field(default_factory=list)


@dataclass
class RunSpec:
    index: int
    vocab: str
    agent: str
    scenario: str
    start: datetime
    steps: list[Step]
    loops: set[str]
    idle_gap: bool = False
    stuck: bool = False
    in_flight: bool = False
    content: bool = True
    ok: bool = True
    session: str | None = None


@dataclass
class Labels:
    """Ground truth keyed the way the detectors report."""

    run_loops: dict[str, set[str]] = field(default_factory=dict)  # trace_id -> loop kinds
    run_scenario: dict[str, str] = field(default_factory=dict)
    run_vocab: dict[str, str] = field(default_factory=dict)
    slow_spans: set[tuple[str, str]] = field(default_factory=set)
    backoff_spans: set[tuple[str, str]] = field(default_factory=set)
    idle_runs: set[str] = field(default_factory=set)
    stuck_traces: set[str] = field(default_factory=set)
    superlinear_agents: set[str] = field(default_factory=set)
    all_agents: set[str] = field(default_factory=set)
    now: datetime = BASE


# --------------------------------------------------------------------------- generation


def _latency(rng: random.Random, tool: str) -> float:
    median, sigma = LATENCY[tool]
    return median * math.exp(rng.gauss(0.0, sigma))


def slow_threshold_ms(tool: str) -> float:
    """max(3 x p95, p95 + 2 s) of the tool's true latency distribution."""
    median, sigma = LATENCY[tool]
    p95 = median * math.exp(1.645 * sigma)
    return max(3 * p95, p95 + 2000)


def _paraphrase(rng: random.Random, text: str) -> str:
    words = text.split()
    op = rng.choice(("reorder", "typo", "stopword", "case", "plural", "drop"))
    if op == "reorder":
        i = rng.randrange(len(words))
        word = words.pop(i)
        words.insert(rng.randrange(len(words) + 1), word)
    elif op == "typo":
        long_words = [i for i, w in enumerate(words) if len(w) >= 6]
        i = rng.choice(long_words or [0])
        w = words[i]
        j = rng.randrange(1, len(w) - 1) if len(w) > 2 else 0
        words[i] = w[:j] + w[j + 1 :] if rng.random() < 0.5 else w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    elif op == "stopword":
        words.insert(rng.randrange(len(words) + 1), rng.choice(FILLER_STOP))
    elif op == "case":
        return " ".join(w.capitalize() for w in words) + rng.choice(("?", "!", "."))
    elif op == "plural":
        i = rng.randrange(len(words))
        words[i] = words[i][:-1] if words[i].endswith("s") else words[i] + "s"
    else:
        if len(words) > 3:
            words.pop(rng.randrange(len(words)))
        else:
            words.append("please")
    return " ".join(words)


class _Filler:
    """Unique calls with no loop relation to anything else in the run."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def call(self, avoid_tools: tuple[str, ...] = ()) -> Call:
        rng = self.rng
        while True:
            tool = rng.choice(
                [t for t in ("kb_lookup", "calculator", "query_order", "weather") if t not in avoid_tools]
            )
            if tool == "kb_lookup":
                args = {"topic": rng.choice(TOPICS), "section": rng.randint(1, 40)}
            elif tool == "calculator":
                args = {"expression": f"{rng.randint(2, 999)} * {rng.randint(2, 99)}"}
            elif tool == "query_order":
                args = {"order_id": f"A-{rng.randint(10000, 99999)}"}
            else:
                args = {"city": rng.choice(CITIES), "days": rng.randint(1, 14)}
            key = canonical_json([tool, args])
            if key not in self.used:
                self.used.add(key)
                return Call(tool, args, _latency(rng, tool))


def _calls_for(rng: random.Random, scenario: str, filler: _Filler) -> tuple[list[Call], set[str]]:
    """The tool calls of one run and its loop kinds."""
    calls: list[Call] = []
    if scenario == "normal":
        calls = [filler.call() for _ in range(rng.randint(2, 5))]
        if rng.random() < 0.5:  # the same tool failing twice with one error type is not a loop
            tool_calls = [
                Call(
                    "query_order",
                    {"order_id": f"B-{rng.randint(10000, 99999)}"},
                    _latency(rng, "query_order"),
                    "NotFound",
                    "permanent",
                )
                for _ in range(2)
            ]
            calls[1:1] = [
                *tool_calls,
                Call("query_order", {"order_id": f"C-{rng.randint(10000, 99999)}"}, _latency(rng, "query_order")),
            ]
        return calls, set()
    if scenario == "pagination":
        mode = rng.choice(("page", "offset", "cursor"))
        query = rng.choice(TOPICS)
        for page in range(rng.randint(3, 6)):
            if mode == "page":
                args = {
                    "customer": f"cust-{rng.randint(100, 999)}" if page == 0 else calls[0].args["customer"],
                    "page": page + 1,
                }
                tool = "list_orders"
            elif mode == "offset":
                args, tool = {"query": query, "offset": page * 20, "limit": 20}, "search"
            else:
                cursor = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(16))
                args, tool = ({"query": query} if page == 0 else {"query": query, "cursor": cursor}), "search"
            calls.append(Call(tool, args, _latency(rng, tool)))
        return calls, set()
    if scenario == "single_retry":
        calls = [filler.call() for _ in range(rng.randint(1, 3))]
        tool = rng.choice(("search", "fetch_page"))
        args = {"query": rng.choice(TOPICS)} if tool == "search" else {"url": rng.choice(URLS)}
        failed = Call(tool, args, _latency(rng, tool), rng.choice(("timeout", "429", "503")), "transient")
        calls[1:1] = [failed, Call(tool, args, _latency(rng, tool))]
        return calls, set()
    if scenario == "dissimilar":
        if rng.random() < 0.5:
            queries = rng.sample(TOPICS, rng.randint(3, 5))
        else:
            template = rng.choice(ENTITY_TEMPLATES)
            queries = [template.format(c=c) for c in rng.sample(CITIES, rng.randint(3, 5))]
        calls = [Call("search", {"query": q}, _latency(rng, "search")) for q in queries]
        return calls, set()
    if scenario == "exact":
        tool = rng.choice(("search", "fetch_page"))
        args = {"query": rng.choice(TOPICS)} if tool == "search" else {"url": rng.choice(URLS)}
        for i in range(rng.randint(3, 5)):
            if i and rng.random() < 0.5:
                calls.append(filler.call())
            calls.append(Call(tool, args, _latency(rng, tool)))
        return calls, {"exact"}
    if scenario == "oscillation":
        period = rng.choice((2, 3))
        cycle = [Call("search", {"query": rng.choice(TOPICS)}, 0.0), Call("fetch_page", {"url": rng.choice(URLS)}, 0.0)]
        if period == 3:
            cycle.append(filler.call(avoid_tools=("search", "fetch_page")))
        lead = [filler.call() for _ in range(rng.randint(0, 2))]
        body = [Call(c.tool, c.args, _latency(rng, c.tool)) for _ in range(2) for c in cycle]
        return lead + body + [filler.call()], {"oscillation"}
    if scenario == "repeated_error":
        kind = rng.choice(("query_order", "fetch_page"))
        error, cls = ("NotFound", "permanent") if kind == "query_order" else ("403", "fatal")
        calls = [filler.call(avoid_tools=(kind,))]
        for _ in range(rng.randint(3, 4)):
            args = (
                {"order_id": f"X-{rng.randint(10000, 99999)}"}
                if kind == "query_order"
                else {"url": f"{rng.choice(URLS)}/{rng.randint(1, 9999)}"}
            )
            calls.append(Call(kind, args, _latency(rng, kind), error, cls))
            if rng.random() < 0.3:
                calls.append(filler.call(avoid_tools=(kind,)))
        return calls, {"repeated_error"}
    if scenario == "semantic":
        base = rng.choice(TOPICS)
        texts = [base]
        while len(texts) < rng.randint(3, 4):
            candidate = _paraphrase(rng, base)
            if candidate not in texts:
                texts.append(candidate)
        calls = [filler.call(avoid_tools=("search",))]
        calls += [Call("search", {"query": t}, _latency(rng, "search")) for t in texts]
        return calls, {"semantic"}
    raise ValueError(scenario)


AGENT_CURVES = {"support": "linear", "research": "superlinear", "summarizer": "compressing", "planner": "linear"}


def _tokens(rng: random.Random, curve: str, step: int, base: int, per_step: int) -> int:
    if curve == "linear":
        grow = per_step * step
    elif curve == "superlinear":
        grow = per_step * step**2
    else:
        grow = per_step * min(step, 2) + 40 * math.log1p(step)
    return int((base + grow) * math.exp(rng.gauss(0, 0.03)))


def generate(seed: int = 7, runs_per_vocab: int = 120) -> list[RunSpec]:
    """The run specifications: every scenario in every vocabulary, plus stall and burn variety."""
    rng = random.Random(seed)
    specs: list[RunSpec] = []
    index = 0
    for vocab in VOCABULARIES:
        for i in range(runs_per_vocab):
            scenario = SCENARIOS[i % len(SCENARIOS)]
            agent_base = list(AGENT_CURVES)[(i // len(SCENARIOS)) % len(AGENT_CURVES)]
            agent = f"{agent_base}-{vocab}"
            filler = _Filler(rng)
            calls, kinds = _calls_for(rng, scenario, filler)
            content = vocab != "loopsight" or rng.random() < 0.5
            if scenario == "semantic" and vocab == "loopsight" and (not content or rng.random() < 0.5):
                for call in calls[2:]:
                    call.guard = "semantic"
            # one call per step, sometimes two
            steps: list[Step] = []
            curve = AGENT_CURVES[agent_base]
            base, per_step = rng.randint(600, 1200), rng.randint(150, 400)
            pending = list(calls)
            while pending:
                take = 2 if len(pending) > 2 and rng.random() < 0.2 else 1
                step_calls, pending = pending[:take], pending[take:]
                steps.append(
                    Step(0, rng.randint(40, 300), 600 * math.exp(rng.gauss(0, 0.3)), rng.uniform(5, 250), step_calls)
                )
            steps.append(Step(0, rng.randint(80, 400), 700 * math.exp(rng.gauss(0, 0.3)), rng.uniform(5, 250)))
            for n, step in enumerate(steps):
                step.input_tokens = _tokens(rng, curve, n, base, per_step)
            spec = RunSpec(
                index,
                vocab,
                agent,
                scenario,
                BASE + timedelta(seconds=index * RUN_SPACING_S),
                steps,
                kinds,
                content=content,
            )
            if rng.random() < 0.06:  # natural tail stays far below the rule; these are far above it
                call = rng.choice([c for s in steps for c in s.calls])
                call.duration_ms = slow_threshold_ms(call.tool) * rng.uniform(1.3, 3.0)
                call.slow = True
            if vocab == "loopsight" and rng.random() < 0.25:
                call = rng.choice([c for s in steps for c in s.calls])
                big = rng.random() < 0.5
                call.backoffs_ms = (
                    [rng.uniform(600, 2500) for _ in range(rng.randint(1, 3))] if big else [rng.uniform(100, 600)]
                )
            if rng.random() < 0.08 and len(steps) > 1:
                rng.choice(steps[1:]).gap_ms = rng.uniform(4000, 30000)
                spec.idle_gap = True
            specs.append(spec)
            index += 1
    end = BASE + timedelta(seconds=index * RUN_SPACING_S)
    # Runs in flight at the end: some silent for long (stuck), some still talking (not stuck).
    for j in range(24):
        vocab = VOCABULARIES[j % len(VOCABULARIES)]
        filler = _Filler(rng)
        calls = [filler.call() for _ in range(2)]
        steps = [Step(900 + 300 * n, 100, 600.0, 20.0, [c]) for n, c in enumerate(calls)]
        stuck = j % 2 == 0
        offset = rng.uniform(900, 3000) if stuck else rng.uniform(5, 60)
        spec = RunSpec(index, vocab, f"support-{vocab}", "in_flight", end - timedelta(seconds=offset), steps, set())
        spec.stuck, spec.in_flight = stuck, True
        specs.append(spec)
        index += 1
    return specs


def corpus_now(specs: list[RunSpec]) -> datetime:
    """The evaluation time for ``stuck``: just after the last regular run."""
    return BASE + timedelta(seconds=sum(1 for s in specs if not s.in_flight) * RUN_SPACING_S)


# --------------------------------------------------------------------------- emission


def _ns(moment: datetime) -> int:
    return int((moment - datetime(1970, 1, 1)).total_seconds() * 1e9)


def _run_attrs(vocab: str, agent: str) -> tuple[str, dict[str, Any]]:
    if vocab == "loopsight":
        return f"invoke_agent {agent}", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
    if vocab == "openinference":
        return agent, {"openinference.span.kind": "AGENT", "agent.name": agent}
    if vocab == "traceloop":
        return f"{agent}.agent", {"traceloop.span.kind": "agent", "traceloop.entity.name": agent}
    return f"invoke_agent {agent}", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}


def _llm_attrs(vocab: str, step: Step, n: int) -> tuple[str, dict[str, Any]]:
    if vocab == "loopsight":
        return f"chat {MODEL}", {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": MODEL,
            "loopsight.step": n,
            "gen_ai.usage.input_tokens": step.input_tokens,
            "gen_ai.usage.output_tokens": step.output_tokens,
        }
    if vocab == "openinference":
        return "ChatCompletion", {
            "openinference.span.kind": "LLM",
            "llm.model_name": MODEL,
            "llm.token_count.prompt": step.input_tokens,
            "llm.token_count.completion": step.output_tokens,
        }
    if vocab == "traceloop":
        return "openai.chat", {
            "gen_ai.system": "openai",
            "llm.request.type": "chat",
            "gen_ai.request.model": MODEL,
            "gen_ai.usage.prompt_tokens": step.input_tokens,
            "gen_ai.usage.completion_tokens": step.output_tokens,
        }
    return f"chat {MODEL}", {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": MODEL,
        "gen_ai.usage.input_tokens": step.input_tokens,
        "gen_ai.usage.output_tokens": step.output_tokens,
    }


def _tool_attrs(vocab: str, call: Call, n: int, content: bool) -> tuple[str, dict[str, Any]]:
    text = call.args if isinstance(call.args, str) else json.dumps(call.args)
    if vocab == "loopsight":
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.tool,
            "loopsight.step": n,
            "loopsight.tool.args_hash": args_hash(call.args),
            "loopsight.tool.attempts": 1 + len(call.backoffs_ms),
        }
        if content:
            attrs["gen_ai.tool.call.arguments"] = canonical_json(call.args)
        if call.result is not None and result_hash(call.result):
            attrs["loopsight.tool.result_hash"] = result_hash(call.result)
        if call.guard:
            attrs["loopsight.loop.kind"] = call.guard
            attrs["loopsight.loop.similarity"] = 0.93
        if call.error:
            attrs["error.type"] = call.error
            attrs["loopsight.error.class"] = call.error_class
        return f"execute_tool {call.tool}", attrs
    if vocab == "openinference":
        attrs = {"openinference.span.kind": "TOOL", "tool.name": call.tool, "input.value": text}
        if call.result is not None:
            attrs["output.value"] = call.result
        return call.tool, attrs
    if vocab == "traceloop":
        attrs = {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": call.tool,
            "traceloop.entity.input": text
            if isinstance(call.args, str)
            else json.dumps({"args": [], "kwargs": call.args}),
        }
        if call.result is not None:
            attrs["traceloop.entity.output"] = json.dumps(call.result)  # Traceloop JSON-encodes what the tool returned
        return f"{call.tool}.tool", attrs
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.tool, "gen_ai.tool.call.arguments": text}
    if call.result is not None:
        attrs["gen_ai.tool.call.result"] = call.result
    if call.error:
        attrs["error.type"] = call.error
    return f"execute_tool {call.tool}", attrs


def emit(specs: list[RunSpec]) -> tuple[list[Any], dict[int, tuple[str, dict[int, str]]]]:
    """Real SDK spans for every run; returns the finished spans and, per run, its trace id and span ids of calls."""
    exporter = InMemorySpanExporter()
    providers: dict[str, TracerProvider] = {}
    ids: dict[int, tuple[str, dict[int, str]]] = {}
    for spec in specs:
        provider = providers.get(spec.vocab)
        if provider is None:
            provider = TracerProvider(resource=Resource.create({"service.name": f"corpus-{spec.vocab}"}))
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            providers[spec.vocab] = provider
        tracer = provider.get_tracer(f"corpus.{spec.vocab}")
        name, attrs = _run_attrs(spec.vocab, spec.agent)
        if spec.session:
            attrs = {
                **attrs,
                ("session.id" if spec.vocab == "openinference" else "gen_ai.conversation.id"): spec.session,
            }
        run = tracer.start_span(
            name,
            kind=SpanKind.INTERNAL,
            attributes=attrs,
            start_time=_ns(spec.start),
            context=trace.set_span_in_context(trace.INVALID_SPAN),
        )
        ctx = trace.set_span_in_context(run)
        t = spec.start
        call_ids: dict[int, str] = {}
        call_no = 0
        for n, step in enumerate(spec.steps):
            t += timedelta(milliseconds=step.gap_ms)
            lname, lattrs = _llm_attrs(spec.vocab, step, n)
            llm = tracer.start_span(lname, context=ctx, kind=SpanKind.CLIENT, attributes=lattrs, start_time=_ns(t))
            t += timedelta(milliseconds=step.llm_ms)
            llm.end(end_time=_ns(t))
            for call in step.calls:
                t += timedelta(milliseconds=random.Random(call_no).uniform(1, 30))
                tname, tattrs = _tool_attrs(spec.vocab, call, n, spec.content)
                span = tracer.start_span(
                    tname, context=ctx, kind=SpanKind.INTERNAL, attributes=tattrs, start_time=_ns(t)
                )
                for backoff in call.backoffs_ms:
                    t += timedelta(milliseconds=call.duration_ms / 2)
                    span.add_event(
                        "retry",
                        {
                            "error.type": "timeout",
                            "loopsight.error.class": "transient",
                            "loopsight.backoff_ms": round(backoff, 1),
                        },
                        timestamp=_ns(t),
                    )
                    t += timedelta(milliseconds=backoff)
                if call.guard:
                    span.add_event("loop_detected", {"loopsight.loop.kind": call.guard}, timestamp=_ns(t))
                t += timedelta(milliseconds=call.duration_ms)
                if call.error:
                    if spec.vocab in ("openinference", "traceloop"):
                        span.add_event(
                            "exception",
                            {"exception.type": call.error, "exception.message": f"{call.tool} failed"},
                            timestamp=_ns(t),
                        )
                    span.set_status(Status(StatusCode.ERROR, f"{call.tool} failed"))
                span.end(end_time=_ns(t))
                call_ids[call_no] = format(span.get_span_context().span_id, "016x")
                call_no += 1
        t += timedelta(milliseconds=15)
        if not spec.in_flight:
            if spec.vocab == "loopsight":
                run.set_attribute("loopsight.termination.reason", "completed" if spec.ok else "error")
            run.end(end_time=_ns(t))
        ids[spec.index] = (format(run.get_span_context().trace_id, "032x"), call_ids)
    return list(exporter.get_finished_spans()), ids


def labels_for(specs: list[RunSpec], ids: dict[int, tuple[str, dict[int, str]]]) -> Labels:
    labels = Labels(now=corpus_now(specs))
    for spec in specs:
        trace_id, call_ids = ids[spec.index]
        labels.all_agents.add(spec.agent)
        if AGENT_CURVES[spec.agent.split("-")[0]] == "superlinear":
            labels.superlinear_agents.add(spec.agent)
        if spec.in_flight:
            if spec.stuck:
                labels.stuck_traces.add(trace_id)
            continue
        labels.run_loops[trace_id] = set(spec.loops)
        labels.run_scenario[trace_id] = spec.scenario
        labels.run_vocab[trace_id] = spec.vocab
        if spec.idle_gap:
            labels.idle_runs.add(trace_id)
        calls = [c for s in spec.steps for c in s.calls]
        for n, call in enumerate(calls):
            if call.slow:
                labels.slow_spans.add((trace_id, call_ids[n]))
            if sum(call.backoffs_ms) >= MIN_BACKOFF_MS:
                labels.backoff_spans.add((trace_id, call_ids[n]))
    return labels


def build(db_path: str | Path, seed: int = 7, runs_per_vocab: int = 120) -> Labels:
    """Generate, emit and ingest the corpus into a DuckDB file; returns the ground truth."""
    specs = generate(seed, runs_per_vocab)
    spans, ids = emit(specs)
    store = Store.open(str(db_path))
    try:
        for i in range(0, len(spans), 2000):
            ingest_request(store, spans_to_request(spans[i : i + 2000]))
    finally:
        store.close()
    return labels_for(specs, ids)


# --------------------------------------------------------------------------- scoring


def _pr(truth: set[Any], found: set[Any]) -> dict[str, Any]:
    tp = len(truth & found)
    return {
        "support": len(truth),
        "flagged": len(found),
        "tp": tp,
        "precision": tp / len(found) if found else 1.0,
        "recall": tp / len(truth) if truth else 1.0,
    }


def openlit_runs(con: Any) -> set[str]:
    """OpenLIT's rule on the same store: a run loops when one (tool, args) is called 3 times."""
    found = con.execute(
        """SELECT DISTINCT "TraceId" FROM spans WHERE span_type = 'tool' AND args_hash IS NOT NULL AND run_id IS NOT NULL
           GROUP BY "TraceId", run_id, tool, args_hash HAVING count(*) >= 3"""
    ).fetchall()
    return {r[0] for r in found}


def score(con: Any, labels: Labels) -> dict[str, Any]:
    """Precision and recall per kind for loopsight and, for loops, OpenLIT's rule."""
    detected = loop_run_ids(con)
    by_kind: dict[str, set[str]] = defaultdict(set)
    for (trace_id, _run), kinds in detected.items():
        for kind in kinds:
            by_kind[kind].add(trace_id)
    out: dict[str, Any] = {"loopsight": {}, "openlit": {}, "by_vocab": {}}
    truth_any = {t for t, k in labels.run_loops.items() if k}
    for kind in LOOP_KINDS:
        truth = {t for t, k in labels.run_loops.items() if kind in k}
        out["loopsight"][kind] = _pr(truth, by_kind[kind])
        for vocab in VOCABULARIES:
            in_vocab = {t for t, v in labels.run_vocab.items() if v == vocab}
            out["by_vocab"].setdefault(vocab, {})[kind] = _pr(truth & in_vocab, by_kind[kind] & in_vocab)
    found_any = {t for (t, _r) in detected}
    out["loopsight"]["any_loop"] = _pr(truth_any, found_any)
    flagged = openlit_runs(con)
    for kind in LOOP_KINDS:
        truth = {t for t, k in labels.run_loops.items() if kind in k}
        out["openlit"][kind] = _pr(truth, flagged & truth) | {"precision": None}
    out["openlit"]["any_loop"] = _pr(truth_any, flagged)
    negatives = {
        t for t, s in labels.run_scenario.items() if s in ("pagination", "single_retry", "dissimilar", "normal")
    }
    out["hard_negatives_flagged"] = {
        "loopsight": len(found_any & negatives),
        "openlit": len(flagged & negatives),
        "of": len(negatives),
    }

    found_stalls = stalls(con, now=labels.now, stuck_after_seconds=STUCK_AFTER_S, limit=100_000)
    got: dict[str, set[Any]] = defaultdict(set)
    for s in found_stalls:
        if s["kind"] in ("slow_call", "backoff"):
            got[s["kind"]].add((s["trace_id"], s["span_id"]))
        else:
            got[s["kind"]].add(s["trace_id"])
    got["slow_call"] = {
        x for x in got["slow_call"] if x[0] in labels.run_loops
    }  # tool calls only: the corpus labels tool calls
    out["loopsight"]["slow_call"] = _pr(labels.slow_spans, got["slow_call"])
    out["loopsight"]["backoff"] = _pr(labels.backoff_spans, got["backoff"])
    out["loopsight"]["idle_gap"] = _pr(labels.idle_runs, got["idle_gap"])
    out["loopsight"]["stuck"] = _pr(labels.stuck_traces, got["stuck"])
    agents = burn(con)["agents"]
    out["loopsight"]["superlinear"] = _pr(labels.superlinear_agents, {a["agent"] for a in agents if a["superlinear"]})
    out["exponents"] = {a["agent"]: a["growth_exponent"] for a in agents}
    return out


def markdown(result: dict[str, Any]) -> str:
    """The per-kind table for docs/detection.md."""
    lines = [
        "| kind | support | loopsight precision | loopsight recall | OpenLIT rule recall |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind, m in result["loopsight"].items():
        ol = result["openlit"].get(kind)
        ol_text = f"{ol['recall']:.2f}" if ol else "—"
        lines.append(f"| {kind} | {m['support']} | {m['precision']:.2f} | {m['recall']:.2f} | {ol_text} |")
    ol = result["openlit"]["any_loop"]
    lines.append(
        f"\nOpenLIT rule, any loop: precision {ol['precision']:.2f}, recall {ol['recall']:.2f}. "
        f"Hard-negative runs flagged: loopsight {result['hard_negatives_flagged']['loopsight']}, "
        f"OpenLIT {result['hard_negatives_flagged']['openlit']} of {result['hard_negatives_flagged']['of']}."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="/tmp/loopsight-corpus.duckdb")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs-per-vocab", type=int, default=120)
    args = parser.parse_args(argv)
    Path(args.db).unlink(missing_ok=True)
    started = time.perf_counter()
    labels = build(args.db, args.seed, args.runs_per_vocab)
    import duckdb

    con = DuckDBReader(duckdb.connect(args.db, read_only=True))
    result = score(con, labels)
    print(markdown(result))
    print("\nper vocabulary:")
    for vocab, kinds in result["by_vocab"].items():
        print(
            " ", vocab, {k: (round(v["precision"], 2), round(v["recall"], 2), v["support"]) for k, v in kinds.items()}
        )
    print(
        "\ngrowth exponents:",
        {k: round(v, 2) if v is not None else None for k, v in sorted(result["exponents"].items())},
    )
    print(
        f"\n{sum(1 for _ in labels.run_loops)} finished runs + {len(labels.stuck_traces)} stuck; {time.perf_counter() - started:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
