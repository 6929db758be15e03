"""OpenAI Agents SDK + openinference-instrumentation-openai-agents.

The agent talks to the model server through chat completions (``OpenAIChatCompletionsModel``),
not the Responses API. ``max_turns=TURN_LIMIT`` is the turn limit (raises ``MaxTurnsExceeded``).
A session is an in-memory ``SQLiteSession`` (and the run's ``group_id``).
"""

from __future__ import annotations

import asyncio

from _kit import COUNTERS as counters
from _kit import Recorder, otlp_provider, parse_args
from agents import (
    Agent,
    MaxTurnsExceeded,
    ModelSettings,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    SQLiteSession,
    function_tool,
)
from openai import AsyncOpenAI
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

from recorder.scenarios import AGENT_NAME, INSTRUCTIONS, MODEL, TURN_LIMIT

args = parse_args("openai_agents")
provider = otlp_provider(args.capture_url, "recorder-openai-agents")
OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
client = AsyncOpenAI(base_url=args.model_url, api_key="sk-recorder", max_retries=0)


@function_tool
def search_flights(query: str) -> str:
    """Search flights for a free-text query."""
    return counters.run("search_flights", query=query)


@function_tool
def lookup_order(order_id: str) -> str:
    """Look up an order by its id."""
    return counters.run("lookup_order", order_id=order_id)


@function_tool
def track_package(order_id: str) -> str:
    """Track the package of an order."""
    return counters.run("track_package", order_id=order_id)


@function_tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return counters.run("get_weather", city=city)


@function_tool
def get_exchange_rate(currency: str) -> str:
    """Exchange rate of a currency against GBP."""
    return counters.run("get_exchange_rate", currency=currency)


def make_agent(stream: bool) -> Agent:
    settings = ModelSettings(include_usage=True) if stream else ModelSettings()
    return Agent(
        name=AGENT_NAME,
        instructions=INSTRUCTIONS,
        model_settings=settings,
        model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
        tools=[search_flights, lookup_order, track_package, get_weather, get_exchange_rate],
    )


async def invoke(task: str, stream: bool, session: SQLiteSession | None) -> str:
    agent = make_agent(stream)
    config = RunConfig(group_id=session.session_id if session else None)
    if stream:
        result = Runner.run_streamed(agent, task, max_turns=TURN_LIMIT, session=session, run_config=config)
        async for _ in result.stream_events():
            pass
        return str(result.final_output)
    result = await Runner.run(agent, task, max_turns=TURN_LIMIT, session=session, run_config=config)
    return str(result.final_output)


rec = Recorder(
    args.config,
    args,
    ["openai-agents", "openinference-instrumentation-openai-agents"],
    flush=provider.force_flush,
    limit_reason="max_steps",
    notes="chat completions API; max_turns=5 raises MaxTurnsExceeded",
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
        sessions: dict[str, SQLiteSession] = {}
        for inv in recording.invocations():
            session = sessions.setdefault(inv.session_id, SQLiteSession(inv.session_id)) if inv.session_id else None
            with inv:
                try:
                    inv.result = asyncio.run(invoke(inv.task, scenario.stream, session))
                except MaxTurnsExceeded:
                    inv.termination = "max_steps"
                    raise
provider.shutdown()
