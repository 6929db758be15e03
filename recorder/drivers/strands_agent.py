"""Strands Agents with its OpenAI model provider and its built-in OpenTelemetry tracing (the
global tracer provider). ``strands_latest`` runs the same with
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` (set by record.py).

Strands always streams from the model (``stream_options.include_usage``), so there is no separate
``streaming`` scenario. The turn limit is ``limits={"turns": TURN_LIMIT}``: the run stops with
``stop_reason == "limit_turns"`` (no raise). Tool errors are fed back (status error). A session is
a ``FileSessionManager`` plus ``trace_attributes={"session.id": ...}`` as the Strands docs show.
"""

from __future__ import annotations

import os
import tempfile

from _kit import COUNTERS as counters
from _kit import Recorder, otlp_provider, parse_args
from strands import Agent, tool
from strands.models.openai import OpenAIModel
from strands.session.file_session_manager import FileSessionManager

from recorder.scenarios import AGENT_NAME, INSTRUCTIONS, MODEL, TURN_LIMIT

LATEST = os.environ.get("OTEL_SEMCONV_STABILITY_OPT_IN", "") == "gen_ai_latest_experimental"
args = parse_args("strands_latest" if LATEST else "strands")
provider = otlp_provider(args.capture_url, "recorder-strands")


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


def make_agent(session_id: str | None) -> Agent:
    model = OpenAIModel(
        client_args={"api_key": "sk-recorder", "base_url": args.model_url, "max_retries": 0}, model_id=MODEL
    )
    extra = {}
    if session_id:
        extra = {
            "session_manager": FileSessionManager(session_id, storage_dir=tempfile.mkdtemp()),
            "trace_attributes": {"session.id": session_id},
        }
    return Agent(
        model=model,
        name=AGENT_NAME,
        system_prompt=INSTRUCTIONS,
        callback_handler=None,
        tools=[search_flights, lookup_order, track_package, get_weather, get_exchange_rate],
        **extra,
    )


rec = Recorder(
    args.config,
    args,
    ["strands-agents", "openai"],
    flush=provider.force_flush,
    limit_reason="max_steps",
    notes=f"limits={{'turns': {TURN_LIMIT}}} (stop_reason limit_turns, no raise); always streams; "
    f"OTEL_SEMCONV_STABILITY_OPT_IN={os.environ.get('OTEL_SEMCONV_STABILITY_OPT_IN', '')!r}",
)
SUPPORTED = ["single", "exact", "semantic", "repeated_error", "oscillation", "turn_limit", "parallel", "session"]
for scenario in rec.selected(SUPPORTED):
    with rec.scenario(scenario) as recording:
        agent = None
        for inv in recording.invocations():
            agent = agent if (agent and inv.session_id) else make_agent(inv.session_id)
            with inv:
                result = agent(inv.task, limits={"turns": TURN_LIMIT})
                inv.result = str(result)
                if result.stop_reason == "limit_turns":
                    inv.termination = "max_steps"
provider.shutdown()
