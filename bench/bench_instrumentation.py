"""Per-call overhead of a decorated tool: loopsight vs the bare OTel SDK, Langfuse, OpenInference.

Every variant wraps the same trivial tool body and runs inside an open parent span, on a
TracerProvider with no span processor (nothing is exported). Variants run interleaved, one
batch each per repeat, and the figures are medians over repeats, so machine noise hits all of
them alike. Competitors are optional: absent packages are skipped with a note.

    .venv/bin/python bench/bench_instrumentation.py [--calls 20000] [--repeats 15]

For the competitor columns run it in a venv that also has them (never a project dependency):

    python3 -m venv /tmp/benchvenv
    /tmp/benchvenv/bin/pip install -e /work/main langfuse openinference-instrumentation
    /tmp/benchvenv/bin/python bench/bench_instrumentation.py
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanKind

import loopsight
from loopsight import attributes as A
from loopsight.instrumentation.state import STATE


def body(order_id: str) -> str:
    return order_id


def passthrough(fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return call


def build(provider: TracerProvider) -> tuple[dict[str, Callable[[], None]], list[str]]:
    """Variant name -> a function running one tool call inside its parent span."""
    notes: list[str] = []
    tracer = provider.get_tracer("bench")
    STATE.provider = provider
    variants: dict[str, Callable[[], None]] = {}

    variants["undecorated"] = lambda: body("A1")
    wrapped = passthrough(body)
    variants["undecorated + 1 call"] = lambda: wrapped("A1")

    attrs = {
        A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
        A.TOOL_NAME: "body",
        A.TOOL_ARGS_HASH: loopsight.args_hash({"order_id": "A1"}),
        A.TOOL_ATTEMPTS: 1,
        A.STEP: 0,
    }

    def bare_otel() -> None:
        with tracer.start_as_current_span("execute_tool body", kind=SpanKind.INTERNAL, attributes=attrs):
            body("A1")

    variants["bare OTel SDK"] = bare_otel

    def bare_otel_hashing() -> None:
        a = dict(attrs)
        a[A.TOOL_ARGS_HASH] = loopsight.args_hash({"order_id": "A1"})
        with tracer.start_as_current_span("execute_tool body", kind=SpanKind.INTERNAL, attributes=a):
            body("A1")

    variants["bare OTel SDK + args hash"] = bare_otel_hashing

    decorated = loopsight.tool(body)
    variants["loopsight @tool"] = lambda: decorated("A1")

    # Runs with loopsight's off switch set for the whole batch (see time_batch).
    variants["loopsight @tool, LOOPSIGHT_DISABLED=1"] = _DisabledFlag(loopsight.tool(body))

    try:
        from langfuse import Langfuse, observe
        from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

        class Discard(SpanExporter):
            def export(self, spans: Any) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        # Langfuse always installs its own span processor; give it a provider of its own
        # (so the other variants do not pay for it) and an exporter that discards.
        Langfuse(
            public_key="pk-lf-bench",
            secret_key="sk-lf-bench",
            host="http://127.0.0.1:9",
            tracer_provider=TracerProvider(),
            span_exporter=Discard(),
            flush_interval=3600,
        )
        notes.append(
            "Langfuse runs with its own span processor (batching into a discarding "
            "exporter): that processor is part of what @observe costs"
        )
        observed = observe(as_type="tool", capture_input=False, capture_output=False)(body)
        variants["Langfuse @observe(as_type='tool')"] = lambda: observed("A1")
    except Exception as exc:  # ImportError or an API difference
        notes.append(f"Langfuse skipped: {type(exc).__name__}: {exc}")

    try:
        from openinference.instrumentation import OITracer, TraceConfig

        oi = OITracer(tracer, config=TraceConfig())
        oi_tool = oi.tool(body)
        variants["OpenInference tracer.tool"] = lambda: oi_tool("A1")
    except Exception as exc:
        notes.append(f"OpenInference skipped: {type(exc).__name__}: {exc}")
    return variants, notes


class _DisabledFlag:
    """Marks a variant that must run with loopsight's off switch set for the whole batch."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self) -> None:
        self.fn("A1")


def time_batch(run: Callable[[], None], calls: int, tracer: Any) -> float:
    """Seconds per call for ``calls`` calls inside one parent span."""
    disabled = isinstance(run, _DisabledFlag)
    if disabled:
        STATE.disabled = True
        fn = run.fn
    with tracer.start_as_current_span("invoke_agent bench"), loopsight.agent("bench"):
        start = time.perf_counter()
        if disabled:
            for _ in range(calls):
                fn("A1")
        else:
            for _ in range(calls):
                run()
        elapsed = time.perf_counter() - start
    STATE.disabled = False
    return elapsed / calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000, help="calls per batch")
    parser.add_argument("--repeats", type=int, default=15, help="interleaved batches per variant")
    args = parser.parse_args(argv)

    provider = TracerProvider(resource=Resource.create({"service.name": "bench"}))
    variants, notes = build(provider)
    tracer = provider.get_tracer("bench-parent")
    for run in variants.values():  # warm up
        time_batch(run, 500, tracer)
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.repeats):
        for name, run in variants.items():
            samples[name].append(time_batch(run, args.calls, tracer))
    med = {name: statistics.median(values) * 1e6 for name, values in samples.items()}

    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus; "
        f"{args.calls} calls x {args.repeats} repeats, medians"
    )
    print(f"{'variant':45} {'us/call':>9}")
    for name, value in med.items():
        print(f"{name:45} {value:9.3f}")
    print()
    ours = med["loopsight @tool"]
    bare = med["bare OTel SDK"]
    print(f"loopsight / bare OTel SDK              = {ours / bare:.2f}  (goal <= 1.3)")
    print(f"loopsight / bare OTel SDK + args hash  = {ours / med['bare OTel SDK + args hash']:.2f}")
    off = med["loopsight @tool, LOOPSIGHT_DISABLED=1"] / med["undecorated + 1 call"]
    print(f"disabled / undecorated + 1 call        = {off:.2f}  (goal <= 1.1)")
    for competitor in ("Langfuse @observe(as_type='tool')", "OpenInference tracer.tool"):
        if competitor in med:
            print(f"loopsight / {competitor:27}= {ours / med[competitor]:.2f}")
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
