"""Run a two-step tool-calling agent through the real ``openai`` client, instrumented by a
real third-party package, and write the finished spans as one OTLP protobuf request.

    python genai_producers.py {openai-v2|openinference|traceloop} BASE_URL OUT.pb

Each vocabulary also marks the agent and the tool the way that ecosystem does (GenAI
``invoke_agent``/``execute_tool`` spans, OpenInference AGENT/TOOL kinds, Traceloop
``@agent``/``@tool`` decorators). Runs in its own process: the instrumentors patch
``openai`` globally and Traceloop sets the global tracer provider.
"""

from __future__ import annotations

import json
import os
import sys

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "Look an order up",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]


def loop(client, tool_span) -> None:
    """model -> tool -> model, as a ReAct agent does."""
    messages = [{"role": "user", "content": "Where is order A-1?"}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    result = tool_span(call.function.name, call.function.arguments)
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)},
    ]
    client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)


def main(vocabulary: str, base_url: str, out: str) -> None:
    import openai

    memory = InMemorySpanExporter()
    client_kwargs = {"base_url": base_url, "api_key": "sk-test", "max_retries": 0}
    if vocabulary == "traceloop":
        from traceloop.sdk import Traceloop
        from traceloop.sdk.decorators import agent, tool
        from traceloop.sdk.instruments import Instruments

        Traceloop.init(
            app_name="traceloop-agent",
            exporter=memory,
            disable_batch=True,
            telemetry_enabled=False,
            instruments={Instruments.OPENAI},
            api_endpoint="http://127.0.0.1:9",
        )

        @tool(name="get_order")
        def get_order(name: str, arguments: str) -> dict:
            return {"status": "shipped"}

        @agent(name="order-assistant")
        def run() -> None:
            loop(openai.OpenAI(**client_kwargs), get_order)

        run()
        trace.get_tracer_provider().force_flush()
    else:
        provider = TracerProvider(resource=Resource.create({"service.name": f"{vocabulary}-agent"}))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        tracer = provider.get_tracer("producer")
        if vocabulary == "openai-v2":
            from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

            OpenAIInstrumentor().instrument(tracer_provider=provider)
            run_attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "order-assistant"}

            def get_order(name: str, arguments: str) -> dict:
                with tracer.start_as_current_span(
                    f"execute_tool {name}",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": name,
                        "gen_ai.tool.call.arguments": arguments,
                    },
                ):
                    return {"status": "shipped"}
        else:
            from openinference.instrumentation.openai import OpenAIInstrumentor

            OpenAIInstrumentor().instrument(tracer_provider=provider)
            run_attrs = {"openinference.span.kind": "AGENT", "agent.name": "order-assistant", "session.id": "s-1"}

            def get_order(name: str, arguments: str) -> dict:
                with tracer.start_as_current_span(
                    name,
                    attributes={
                        "openinference.span.kind": "TOOL",
                        "tool.name": name,
                        "input.value": arguments,
                        "output.value": '{"status": "shipped"}',
                    },
                ):
                    return {"status": "shipped"}

        with tracer.start_as_current_span(
            "order-assistant" if vocabulary == "openinference" else "invoke_agent order-assistant", attributes=run_attrs
        ):
            loop(openai.OpenAI(**client_kwargs), get_order)
        provider.force_flush()

    from loopsight.ingest.pipeline import spans_to_request

    with open(out, "wb") as f:
        f.write(spans_to_request(memory.get_finished_spans()).SerializeToString())


if __name__ == "__main__":
    os.environ.setdefault("TRACELOOP_TELEMETRY", "false")
    main(*sys.argv[1:4])
