"""Runs with known models, tokens and cache hits, as an OTLP/JSON request any GenAI
instrumentation could send, and their costs worked out by hand from the published prices.

Published prices (USD per million tokens; the providers' pricing pages, as genai-prices has them):

| model             | input | cached input | cache write | output | above 200k input tokens in a call |
|-------------------|-------|--------------|-------------|--------|-----------------------------------|
| gpt-4o-mini       | 0.15  | 0.075        | (as input)  | 0.60   |                                   |
| gpt-4o            | 2.50  | 1.25         | (as input)  | 10.00  |                                   |
| claude-sonnet-4-5 | 3.00  | 0.30         | 3.75        | 15.00  | 6.00 / 0.60 / 7.50 / 22.50        |

Runs (agent ``pricing-agent`` unless said), one trace each:

- ``priced``: completed. step 0 gpt-4o-mini 12,000 in (8,192 cached) / 800 out, tool ``search``;
  step 1 claude-sonnet-4-5 250,000 in (200,000 cached, 10,000 written) / 2,000 out (the long-context
  tier), tool ``fetch`` fails; step 2 claude-sonnet-4-5 5,000 in (4,000 cached) / 300 out; step 3 an
  unknown model ``my-finetune`` 100 / 10.
- ``unpriced``: failed (status Error); one ``my-finetune`` call 100 / 10: no price, cost null.
- ``looping`` (agent ``loop-agent``, loop_detected): gpt-4o 1,000 / 1,100 / 1,200 / 1,300 in and 50
  out per step, the same ``search`` call at steps 0-2 (an exact loop from step 0's tool call).
- ``uncached`` and ``cached`` (agent ``cache-agent``): gpt-4o 20,000 in / 100 out, without and with
  16,384 cached input tokens.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

MTOK = 1_000_000

PRICED_STEPS = [
    # (provider, model, input incl. cache, cache read, cache write, output)
    ("openai", "gpt-4o-mini", 12_000, 8_192, 0, 800),
    ("anthropic", "claude-sonnet-4-5", 250_000, 200_000, 10_000, 2_000),
    ("anthropic", "claude-sonnet-4-5", 5_000, 4_000, 0, 300),
    ("openai", "my-finetune", 100, 0, 0, 10),
]

# Each call by hand: uncached input x input price + cached x cached price + written x write price + output x output price.
GPT4O_MINI_CALL = ((12_000 - 8_192) * 0.15 + 8_192 * 0.075 + 800 * 0.60) / MTOK  # 0.0016656
SONNET_LONG_CALL = ((250_000 - 200_000 - 10_000) * 6.00 + 200_000 * 0.60 + 10_000 * 7.50 + 2_000 * 22.50) / MTOK  # 0.48
SONNET_SHORT_CALL = ((5_000 - 4_000) * 3.00 + 4_000 * 0.30 + 300 * 15.00) / MTOK  # 0.0087
PRICED_RUN_COST = GPT4O_MINI_CALL + SONNET_LONG_CALL + SONNET_SHORT_CALL  # 0.4903656; my-finetune: unpriced

LOOP_INPUTS = [1_000, 1_100, 1_200, 1_300]
LOOP_RUN_COST = sum(i * 2.50 + 50 * 10.00 for i in LOOP_INPUTS) / MTOK
# The loop begins with step 0's tool call: the model calls of steps 1-3 come after it.
LOOP_WASTED_TOKENS = sum(i + 50 for i in LOOP_INPUTS[1:])
LOOP_WASTED_COST = sum(i * 2.50 + 50 * 10.00 for i in LOOP_INPUTS[1:]) / MTOK

UNCACHED_COST = (20_000 * 2.50 + 100 * 10.00) / MTOK
CACHED_COST = ((20_000 - 16_384) * 2.50 + 16_384 * 1.25 + 100 * 10.00) / MTOK


def _attr(key: str, value: object) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


@dataclass
class Trace:
    """One trace being written: spans in OTLP/JSON form."""

    start_ns: int
    trace_id: str = field(default_factory=lambda: os.urandom(16).hex())
    spans: list[dict[str, Any]] = field(default_factory=list)
    clock: int = 0

    def span(
        self,
        name: str,
        attrs: dict[str, object],
        *,
        parent: str = "",
        kind: int = 1,
        error: bool = False,
        duration_ms: int = 10,
        span_id: str | None = None,
    ) -> str:
        span_id = span_id or os.urandom(8).hex()
        self.clock += 1
        begin = self.start_ns + self.clock * 20_000_000
        self.spans.append(
            {
                "traceId": self.trace_id,
                "spanId": span_id,
                "parentSpanId": parent,
                "name": name,
                "kind": kind,
                "startTimeUnixNano": str(begin),
                "endTimeUnixNano": str(begin + duration_ms * 1_000_000),
                "attributes": [_attr(k, v) for k, v in attrs.items()],
                "status": {"code": 2} if error else {},
            }
        )
        return span_id

    def chat(self, run: str, step: int, provider: str, model: str, tokens: tuple[int, int, int, int]) -> None:
        inp, read, write, out = tokens
        attrs: dict[str, object] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
            "gen_ai.usage.input_tokens": inp,
            "gen_ai.usage.output_tokens": out,
            "loopsight.step": step,
        }
        if read:
            attrs["gen_ai.usage.cache_read.input_tokens"] = read
        if write:
            attrs["gen_ai.usage.cache_creation.input_tokens"] = write
        self.span(f"chat {model}", attrs, parent=run, kind=3)

    def tool(self, run: str, step: int, name: str, args: str, *, error: bool = False) -> None:
        attrs: dict[str, object] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.arguments": args,
            "loopsight.step": step,
        }
        if error:
            attrs["error.type"] = "TimeoutError"
        self.span(f"execute_tool {name}", attrs, parent=run, error=error)

    def run_span(self, run: str, agent: str, reason: str, *, error: bool = False, session: str | None = None) -> None:
        # the run span comes last, as exporters send it (it ends last); it starts first
        attrs = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "loopsight.termination.reason": reason,
        }
        if session is not None:
            attrs["gen_ai.conversation.id"] = session
        self.spans.append(
            {
                "traceId": self.trace_id,
                "spanId": run,
                "name": f"invoke_agent {agent}",
                "kind": 1,
                "startTimeUnixNano": str(self.start_ns),
                "endTimeUnixNano": str(self.start_ns + (self.clock + 2) * 20_000_000),
                "attributes": [_attr(k, v) for k, v in attrs.items()],
                "status": {"code": 2} if error else {},
            }
        )


@dataclass
class World:
    """The traces of the world, by run name, and the OTLP/JSON body carrying them all."""

    traces: dict[str, Trace]
    start_ns: int

    def body(self) -> bytes:
        spans = [s for t in self.traces.values() for s in t.spans]
        request = {
            "resourceSpans": [
                {
                    "resource": {"attributes": [_attr("service.name", "cost-test")]},
                    "scopeSpans": [{"scope": {"name": "some.genai.instrumentation"}, "spans": spans}],
                }
            ]
        }
        return json.dumps(request).encode()

    def trace_id(self, name: str) -> str:
        return self.traces[name].trace_id


def build(start_ns: int | None = None) -> World:
    """The runs of the module doc, starting 10 minutes ago (one second apart)."""
    base = start_ns if start_ns is not None else time.time_ns() - 600 * 10**9
    traces: dict[str, Trace] = {}

    t = traces["priced"] = Trace(base)
    run = os.urandom(8).hex()
    for step, (provider, model, inp, read, write, out) in enumerate(PRICED_STEPS):
        t.chat(run, step, provider, model, (inp, read, write, out))
        if step == 0:
            t.tool(run, step, "search", '{"q": "invoice 4411"}')
        if step == 1:
            t.tool(run, step, "fetch", '{"url": "https://example.com/4411"}', error=True)
    t.run_span(run, "pricing-agent", "completed")

    t = traces["unpriced"] = Trace(base + 10**9)
    run = os.urandom(8).hex()
    t.chat(run, 0, "openai", "my-finetune", (100, 0, 0, 10))
    t.run_span(run, "pricing-agent", "error", error=True)

    t = traces["looping"] = Trace(base + 2 * 10**9)
    run = os.urandom(8).hex()
    for step, inp in enumerate(LOOP_INPUTS):
        t.chat(run, step, "openai", "gpt-4o", (inp, 0, 0, 50))
        if step < 3:
            t.tool(run, step, "search", '{"q": "same"}')
    t.run_span(run, "loop-agent", "loop_detected")

    for offset, (name, cached) in enumerate((("uncached", 0), ("cached", 16_384))):
        t = traces[name] = Trace(base + (3 + offset) * 10**9)
        run = os.urandom(8).hex()
        t.chat(run, 0, "openai", "gpt-4o", (20_000, cached, 0, 100))
        t.run_span(run, "cache-agent", "completed")
    return World(traces, base)
