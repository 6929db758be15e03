"""Google ADK ``LlmAgent`` on an OpenAI-compatible model through LiteLLM
(``LiteLlm(model="openai/gpt-4o-mini", api_base=...)``), with ADK's built-in OpenTelemetry tracing
on the global tracer provider. ``adk`` runs ADK's defaults (no message content in spans);
``adk_content`` sets ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`` (record.py).

The turn limit is ``RunConfig(max_llm_calls=TURN_LIMIT)`` (raises ``LlmCallsLimitExceededError``).
A tool's ValueError reaches the model through ``on_tool_error_callback`` (without one the run
raises). A session is one ADK session (``InMemorySessionService``) used for two runs.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from _kit import COUNTERS as counters
from _kit import Recorder, otlp_provider, parse_args
from google.adk.agents import LlmAgent
from google.adk.agents.invocation_context import LlmCallsLimitExceededError
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.models.lite_llm import LiteLlm
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from recorder.scenarios import AGENT_NAME, INSTRUCTIONS, MODEL, TURN_LIMIT

CONTENT = os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "")
args = parse_args("adk_content" if CONTENT else "adk")
provider = otlp_provider(args.capture_url, "recorder-adk")


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


def tool_error(tool: Any, tool_args: dict[str, Any], tool_context: Any, error: Exception) -> dict[str, Any]:
    return {"error": f"{type(error).__name__}: {error}"}


agent = LlmAgent(
    name=AGENT_NAME,
    instruction=INSTRUCTIONS,
    on_tool_error_callback=tool_error,
    model=LiteLlm(model=f"openai/{MODEL}", api_base=args.model_url, api_key="sk-recorder"),
    tools=[search_flights, lookup_order, track_package, get_weather, get_exchange_rate],
)
sessions = InMemorySessionService()
runner = Runner(app_name="recorder", agent=agent, session_service=sessions)
loop = asyncio.new_event_loop()  # one loop for every run: LiteLLM's async client outlives a run


async def invoke(task: str, session_id: str, stream: bool) -> str:
    if await sessions.get_session(app_name="recorder", user_id="u1", session_id=session_id) is None:
        await sessions.create_session(app_name="recorder", user_id="u1", session_id=session_id)
    config = RunConfig(max_llm_calls=TURN_LIMIT, streaming_mode=StreamingMode.SSE if stream else StreamingMode.NONE)
    answer = ""
    message = types.Content(role="user", parts=[types.Part(text=task)])
    async for event in runner.run_async(user_id="u1", session_id=session_id, new_message=message, run_config=config):
        if event.is_final_response() and event.content and event.content.parts:
            answer = "".join(p.text or "" for p in event.content.parts)
    return answer


rec = Recorder(
    args.config,
    args,
    ["google-adk", "litellm"],
    flush=provider.force_flush,
    limit_reason="max_steps",
    arguments_captured=bool(CONTENT),
    notes=f"RunConfig(max_llm_calls={TURN_LIMIT}); on_tool_error_callback; "
    f"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT={CONTENT!r}",
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
            with inv:
                try:
                    inv.result = loop.run_until_complete(
                        invoke(inv.task, inv.session_id or f"s-{inv.key}-{scenario.name}", scenario.stream)
                    )
                except LlmCallsLimitExceededError:
                    inv.termination = "max_steps"
                    raise
provider.shutdown()
