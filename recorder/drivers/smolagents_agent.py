"""smolagents ``ToolCallingAgent`` + ``OpenAIServerModel``, instrumented by
openinference-instrumentation-smolagents.

The model answers through smolagents' own ``final_answer`` tool (the model server does that when
the tool is offered). The turn limit is ``max_steps=TURN_LIMIT``: smolagents then asks the model
once more, without tools, for a final answer (no raise). A tool error is fed back to the model
(smolagents catches it). No session concept: ``session`` is skipped.
"""

from __future__ import annotations

from _kit import COUNTERS as counters
from _kit import Recorder, otlp_provider, parse_args
from openinference.instrumentation.smolagents import SmolagentsInstrumentor
from smolagents import OpenAIServerModel, ToolCallingAgent, tool

from recorder.scenarios import AGENT_NAME, MODEL, TURN_LIMIT

args = parse_args("smolagents")
provider = otlp_provider(args.capture_url, "recorder-smolagents")
SmolagentsInstrumentor().instrument(tracer_provider=provider)


@tool
def search_flights(query: str) -> str:
    """Search flights for a free-text query.

    Args:
        query: what to search for.
    """
    return counters.run("search_flights", query=query)


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order by its id.

    Args:
        order_id: the order id.
    """
    return counters.run("lookup_order", order_id=order_id)


@tool
def track_package(order_id: str) -> str:
    """Track the package of an order.

    Args:
        order_id: the order id.
    """
    return counters.run("track_package", order_id=order_id)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: the city.
    """
    return counters.run("get_weather", city=city)


@tool
def get_exchange_rate(currency: str) -> str:
    """Exchange rate of a currency against GBP.

    Args:
        currency: ISO currency code.
    """
    return counters.run("get_exchange_rate", currency=currency)


def make_agent(stream: bool) -> ToolCallingAgent:
    model = OpenAIServerModel(model_id=MODEL, api_base=args.model_url, api_key="sk-recorder")
    return ToolCallingAgent(
        tools=[search_flights, lookup_order, track_package, get_weather, get_exchange_rate],
        model=model,
        name=AGENT_NAME,
        max_steps=TURN_LIMIT,
        stream_outputs=stream,
        verbosity_level=0,
    )


rec = Recorder(
    args.config,
    args,
    ["smolagents", "openinference-instrumentation-smolagents"],
    flush=provider.force_flush,
    limit_reason="max_steps",
    notes=f"ToolCallingAgent(max_steps={TURN_LIMIT}); answers via the final_answer tool; on max steps one "
    "more model call without tools gives the final answer",
)
SUPPORTED = ["single", "exact", "semantic", "repeated_error", "oscillation", "turn_limit", "parallel", "streaming"]
for scenario in rec.selected(SUPPORTED):
    with rec.scenario(scenario) as recording:
        for inv in recording.invocations():
            agent = make_agent(scenario.stream)
            with inv:
                inv.result = agent.run(inv.task)
provider.shutdown()
