"""LangGraph prebuilt ReAct agent (``create_react_agent`` + ``ChatOpenAI``), instrumented by
OpenInference (``LS_INSTRUMENTATION=openinference``) or OpenLLMetry (``=openllmetry``).

Tool errors are fed back to the model (``ToolNode(handle_tool_errors=True)``; the default
re-raises a ValueError). The turn limit is ``recursion_limit`` = 2 supersteps per model turn;
the prebuilt agent answers "Sorry, need more steps..." when too few steps remain (no raise) or
the graph raises ``GraphRecursionError``. A session is a ``thread_id`` on an ``InMemorySaver``.
"""

from __future__ import annotations

import os
import warnings

from _kit import COUNTERS as counters
from _kit import Recorder, otlp_provider, parse_args
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from langgraph.prebuilt import ToolNode, create_react_agent

from recorder.scenarios import AGENT_NAME, INSTRUCTIONS, MODEL, TURN_LIMIT

warnings.filterwarnings("ignore", message=".*create_react_agent has been moved")
INSTRUMENTATION = os.environ.get("LS_INSTRUMENTATION", "openinference")
args = parse_args(f"langgraph_{INSTRUMENTATION}")
provider = otlp_provider(args.capture_url, f"recorder-langgraph-{INSTRUMENTATION}")
if INSTRUMENTATION == "openinference":
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=provider)
    packages = ["openinference-instrumentation-langchain"]
else:
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    LangchainInstrumentor().instrument(tracer_provider=provider)
    packages = ["opentelemetry-instrumentation-langchain"]


@tool
def search_flights(query: str) -> str:
    """Search flights for a free-text query."""
    return counters.run("search_flights", query=query)


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order by its id."""
    return counters.run("lookup_order", order_id=order_id)


@tool
def track_package(order_id: str) -> str:
    """Track the package of an order."""
    return counters.run("track_package", order_id=order_id)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return counters.run("get_weather", city=city)


@tool
def get_exchange_rate(currency: str) -> str:
    """Exchange rate of a currency against GBP."""
    return counters.run("get_exchange_rate", currency=currency)


TOOLS = [search_flights, lookup_order, track_package, get_weather, get_exchange_rate]
checkpointer = InMemorySaver()


def make_agent(stream: bool, memory: bool):
    model = ChatOpenAI(
        model=MODEL, base_url=args.model_url, api_key="sk-recorder", max_retries=0, streaming=stream, stream_usage=True
    )
    return create_react_agent(
        model,
        ToolNode(TOOLS, handle_tool_errors=True),
        prompt=INSTRUCTIONS,
        name=AGENT_NAME,
        checkpointer=checkpointer if memory else None,
    )


rec = Recorder(
    args.config,
    args,
    ["langgraph", "langgraph-prebuilt", "langchain-core", "langchain-openai", *packages],
    flush=provider.force_flush,
    limit_reason="max_steps",
    notes=f"create_react_agent, recursion_limit={2 * TURN_LIMIT}, ToolNode(handle_tool_errors=True)",
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
        for inv in recording.invocations():
            config = {"recursion_limit": 2 * TURN_LIMIT}
            if inv.session_id:
                config["configurable"] = {"thread_id": inv.session_id}
            with inv:
                try:
                    state = make_agent(scenario.stream, bool(inv.session_id)).invoke(
                        {"messages": [("user", inv.task)]}, config
                    )
                    inv.result = state["messages"][-1].content
                    if "need more steps" in str(inv.result):
                        inv.termination = "max_steps"
                except GraphRecursionError:
                    inv.termination = "max_steps"
                    raise
provider.shutdown()
