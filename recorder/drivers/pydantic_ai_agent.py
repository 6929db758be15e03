"""Pydantic AI with its native OpenTelemetry instrumentation (``Agent.instrument_all()`` on the
global tracer provider, default settings).

A tool failure reaches the model as ``ModelRetry`` (a plain ValueError would end the run), with
``retries=5``. The turn limit is ``UsageLimits(request_limit=TURN_LIMIT)`` (raises
``UsageLimitExceeded``). A session is ``conversation_id`` plus the previous run's message history.
"""

from __future__ import annotations

import asyncio

from _kit import COUNTERS as counters
from _kit import Recorder, otlp_provider, parse_args
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import UsageLimits

from recorder.scenarios import AGENT_NAME, INSTRUCTIONS, MODEL, TURN_LIMIT

args = parse_args("pydantic_ai")
provider = otlp_provider(args.capture_url, "recorder-pydantic-ai")
Agent.instrument_all()
model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=args.model_url, api_key="sk-recorder"))
agent = Agent(model, name=AGENT_NAME, instructions=INSTRUCTIONS, retries=5)


def _run(name: str, **kwargs: str) -> str:
    try:
        return counters.run(name, **kwargs)
    except ValueError as exc:
        raise ModelRetry(str(exc)) from exc


@agent.tool_plain
def search_flights(query: str) -> str:
    """Search flights for a free-text query."""
    return _run("search_flights", query=query)


@agent.tool_plain
def lookup_order(order_id: str) -> str:
    """Look up an order by its id."""
    return _run("lookup_order", order_id=order_id)


@agent.tool_plain
def track_package(order_id: str) -> str:
    """Track the package of an order."""
    return _run("track_package", order_id=order_id)


@agent.tool_plain
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return _run("get_weather", city=city)


@agent.tool_plain
def get_exchange_rate(currency: str) -> str:
    """Exchange rate of a currency against GBP."""
    return _run("get_exchange_rate", currency=currency)


async def invoke_streamed(task: str) -> str:
    async with agent.run_stream(task, usage_limits=UsageLimits(request_limit=TURN_LIMIT)) as result:
        return await result.get_output()


rec = Recorder(
    args.config,
    args,
    ["pydantic-ai-slim", "openai"],
    flush=provider.force_flush,
    limit_reason="max_steps",
    notes=f"Agent.instrument_all() defaults; tool errors as ModelRetry; UsageLimits(request_limit={TURN_LIMIT})",
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
        history = None
        for inv in recording.invocations():
            with inv:
                try:
                    if scenario.stream:
                        inv.result = asyncio.run(invoke_streamed(inv.task))
                        continue
                    result = agent.run_sync(
                        inv.task,
                        usage_limits=UsageLimits(request_limit=TURN_LIMIT),
                        message_history=history,
                        conversation_id=inv.session_id if inv.session_id and not history else None,
                    )
                    history = result.all_messages() if inv.session_id else None
                    inv.result = result.output
                except UsageLimitExceeded:
                    inv.termination = "max_steps"
                    raise
provider.shutdown()
