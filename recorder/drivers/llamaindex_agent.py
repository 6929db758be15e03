"""LlamaIndex ``FunctionAgent`` (agent workflow) with ``llama_index.llms.openai.OpenAI``,
instrumented by openinference-instrumentation-llama-index.

``streaming=False`` except in the ``streaming`` scenario (FunctionAgent streams by default). The
turn limit is ``run(max_iterations=TURN_LIMIT + 1)`` (the answer counts as an iteration, so this
allows the same 5 tool turns as the others) with the default ``early_stopping_method="force"``
(raises ``WorkflowRuntimeError``). Tool errors are fed back (``ToolOutput(is_error=True)``). A
session is one ``Context`` reused for two runs (LlamaIndex has no session id).
"""

from __future__ import annotations

import asyncio

from _kit import COUNTERS as counters
from _kit import Recorder, otlp_provider, parse_args
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context
from llama_index.llms.openai import OpenAI
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from workflows.errors import WorkflowRuntimeError

from recorder.scenarios import AGENT_NAME, INSTRUCTIONS, MODEL, TURN_LIMIT

args = parse_args("llamaindex")
provider = otlp_provider(args.capture_url, "recorder-llamaindex")
LlamaIndexInstrumentor().instrument(tracer_provider=provider)


def search_flights(query: str) -> str:
    """Search flights for a free-text query."""
    return counters.run("search_flights", query=query)


def lookup_order(order_id: str) -> str:
    """Look up an order by its id."""
    return counters.run("lookup_order", order_id=order_id)


def track_package(order_id: str) -> str:
    """Track the package of an order."""
    return counters.run("track_package", order_id=order_id)


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return counters.run("get_weather", city=city)


def get_exchange_rate(currency: str) -> str:
    """Exchange rate of a currency against GBP."""
    return counters.run("get_exchange_rate", currency=currency)


TOOLS = [
    FunctionTool.from_defaults(fn)
    for fn in [search_flights, lookup_order, track_package, get_weather, get_exchange_rate]
]


def make_agent(stream: bool) -> FunctionAgent:
    llm = OpenAI(model=MODEL, api_base=args.model_url, api_key="sk-recorder", max_retries=0)
    return FunctionAgent(
        name=AGENT_NAME,
        description="travel and order support",
        system_prompt=INSTRUCTIONS,
        tools=TOOLS,
        llm=llm,
        streaming=stream,
    )


async def invoke(agent: FunctionAgent, task: str, ctx: Context | None) -> str:
    handler = agent.run(user_msg=task, max_iterations=TURN_LIMIT + 1, ctx=ctx)
    return str(await handler)


rec = Recorder(
    args.config,
    args,
    [
        "llama-index-core",
        "llama-index-llms-openai",
        "llama-index-workflows",
        "openinference-instrumentation-llama-index",
    ],
    flush=provider.force_flush,
    limit_reason="max_steps",
    notes=f"FunctionAgent; run(max_iterations={TURN_LIMIT + 1}) raises WorkflowRuntimeError; streaming=False "
    "except the streaming scenario",
)
SUPPORTED = [
    "single",
    "exact",
    "semantic",
    "repeated_error",
    "oscillation",
    "turn_limit",
    "parallel",
    "session",
    "streaming",
]
for scenario in rec.selected(SUPPORTED):
    with rec.scenario(scenario) as recording:
        agent = make_agent(scenario.stream)
        ctx = Context(agent) if scenario.runs > 1 else None
        for inv in recording.invocations():
            with inv:
                try:
                    inv.result = asyncio.run(invoke(agent, inv.task, ctx))
                except WorkflowRuntimeError as exc:
                    if "Max iterations" in str(exc):
                        inv.termination = "max_steps"
                    raise
provider.shutdown()
