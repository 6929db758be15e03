"""CrewAI (one agent, one task, a crew) + openinference-instrumentation-crewai (default mode),
paired with openinference-instrumentation-openai for the model calls (the CrewAI instrumentor's
default mode makes no LLM span; CrewAI 1.x calls OpenAI through the openai SDK).

The agent's role is the agent name. ``LLM(model="openai/gpt-4o-mini", base_url=...)`` uses
CrewAI's native OpenAI provider and native tool calls. ``cache=False`` so that every call the
model asks for runs the tool. The turn limit is ``max_iter=TURN_LIMIT``: CrewAI then asks the
model once more, without tools, for a final answer (no raise). No session concept: skipped.
"""

from __future__ import annotations

import os

from _kit import COUNTERS as counters
from _kit import Recorder, otlp_provider, parse_args

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
from crewai import LLM, Agent, Crew, Task
from crewai.tools import tool
from openinference.instrumentation.crewai import CrewAIInstrumentor
from openinference.instrumentation.openai import OpenAIInstrumentor

from recorder.scenarios import AGENT_NAME, INSTRUCTIONS, MODEL, TURN_LIMIT

args = parse_args("crewai")
provider = otlp_provider(args.capture_url, "recorder-crewai")
CrewAIInstrumentor().instrument(tracer_provider=provider)
OpenAIInstrumentor().instrument(tracer_provider=provider)


@tool("search_flights")
def search_flights(query: str) -> str:
    """Search flights for a free-text query."""
    return counters.run("search_flights", query=query)


@tool("lookup_order")
def lookup_order(order_id: str) -> str:
    """Look up an order by its id."""
    return counters.run("lookup_order", order_id=order_id)


@tool("track_package")
def track_package(order_id: str) -> str:
    """Track the package of an order."""
    return counters.run("track_package", order_id=order_id)


@tool("get_weather")
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return counters.run("get_weather", city=city)


@tool("get_exchange_rate")
def get_exchange_rate(currency: str) -> str:
    """Exchange rate of a currency against GBP."""
    return counters.run("get_exchange_rate", currency=currency)


def kickoff(task: str, stream: bool) -> str:
    llm = LLM(model=f"openai/{MODEL}", base_url=args.model_url, api_key="sk-recorder", stream=stream)
    agent = Agent(
        role=AGENT_NAME,
        goal=INSTRUCTIONS,
        backstory="Helps travellers and shoppers.",
        llm=llm,
        tools=[search_flights, lookup_order, track_package, get_weather, get_exchange_rate],
        max_iter=TURN_LIMIT,
        cache=False,
        verbose=False,
        allow_delegation=False,
    )
    work = Task(description=task, expected_output="A short answer.", agent=agent)
    return str(Crew(agents=[agent], tasks=[work], verbose=False, cache=False).kickoff())


rec = Recorder(
    args.config,
    args,
    ["crewai", "openinference-instrumentation-crewai", "openinference-instrumentation-openai"],
    flush=provider.force_flush,
    limit_reason="max_steps",
    notes=f"Agent(role=support_agent, max_iter={TURN_LIMIT}, cache=False); native OpenAI provider and tool "
    "calls; on max_iter one more model call without tools gives the final answer",
)
SUPPORTED = ["single", "exact", "semantic", "repeated_error", "oscillation", "turn_limit", "parallel", "streaming"]
for scenario in rec.selected(SUPPORTED):
    with rec.scenario(scenario) as recording:
        for inv in recording.invocations():
            with inv:
                inv.result = kickoff(inv.task, scenario.stream)
provider.shutdown()
