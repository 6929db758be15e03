"""The Langfuse SDK: a hand-written ReAct loop under ``@observe(as_type="agent")``, tools under
``@observe(as_type="tool")``, model calls through ``langfuse.openai.OpenAI``.

The Langfuse client exports OTLP/HTTP to ``{base_url}/api/public/otel/v1/traces`` with its own
tracer provider; ``base_url`` is the capture endpoint (no Langfuse server exists here). The loop's
turn limit (``TURN_LIMIT`` model calls) raises ``TurnLimitExceeded``; tool errors are fed back to
the model as text. A session is ``propagate_attributes(session_id=...)`` over one conversation.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from _kit import COUNTERS as counters
from _kit import Recorder, parse_args
from langfuse import Langfuse, observe, propagate_attributes
from langfuse.openai import OpenAI

from recorder.scenarios import AGENT_NAME, INSTRUCTIONS, MODEL, TOOL_SCHEMAS, TURN_LIMIT

args = parse_args("langfuse")
langfuse = Langfuse(public_key="pk-lf-recorder", secret_key="sk-lf-recorder", base_url=args.capture_url)
client = OpenAI(base_url=args.model_url, api_key="sk-recorder", max_retries=0)
SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": name.replace("_", " "),
            "parameters": {"type": "object", "properties": {param: {"type": "string"}}, "required": [param]},
        },
    }
    for name, param in TOOL_SCHEMAS.items()
]


class TurnLimitExceeded(RuntimeError):
    pass


def _tool(name: str) -> Callable[..., str]:
    def call(**kwargs: str) -> str:
        return counters.run(name, **kwargs)

    return observe(name=name, as_type="tool")(call)


TOOLS = {name: _tool(name) for name in TOOL_SCHEMAS}


def chat(messages: list[dict[str, Any]], stream: bool) -> dict[str, Any]:
    """One model call; the assistant message as a dict (streamed chunks put together)."""
    if not stream:
        return (
            client.chat.completions.create(model=MODEL, messages=messages, tools=SCHEMAS)
            .choices[0]
            .message.model_dump(exclude_none=True)
        )
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    calls: dict[int, dict[str, Any]] = {}
    for chunk in client.chat.completions.create(
        model=MODEL, messages=messages, tools=SCHEMAS, stream=True, stream_options={"include_usage": True}
    ):
        for choice in chunk.choices:
            message["content"] += choice.delta.content or ""
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(
                    delta.index, {"id": delta.id, "type": "function", "function": {"name": "", "arguments": ""}}
                )
                call["function"]["name"] += (delta.function.name or "") if delta.function else ""
                call["function"]["arguments"] += (delta.function.arguments or "") if delta.function else ""
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


@observe(name=AGENT_NAME, as_type="agent")
def support_agent(task: str, history: list[dict[str, Any]], stream: bool = False) -> str:
    messages = history or [{"role": "system", "content": INSTRUCTIONS}]
    messages.append({"role": "user", "content": task})
    for _ in range(TURN_LIMIT):
        message = chat(messages, stream)
        messages.append(message)
        if not message.get("tool_calls"):
            return message.get("content") or ""
        for call in message["tool_calls"]:
            try:
                result = TOOLS[call["function"]["name"]](**json.loads(call["function"]["arguments"]))
            except ValueError as exc:
                result = f"error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    raise TurnLimitExceeded(f"no answer after {TURN_LIMIT} model turns")


rec = Recorder(
    args.config,
    args,
    ["langfuse", "openai"],
    flush=langfuse.flush,
    limit_reason="max_steps",
    limit_unexported="a hand-written loop's own exception; Langfuse exports only its status message, "
    "no step budget or limit signal",
    notes=f"hand-written loop; @observe agent/tool; langfuse.openai wrapper; raises TurnLimitExceeded after "
    f"{TURN_LIMIT} model turns",
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
        history: list[dict[str, Any]] = []
        for inv in recording.invocations():
            with inv:
                if inv.session_id:
                    with propagate_attributes(session_id=inv.session_id):
                        inv.result = support_agent(inv.task, history, scenario.stream)
                else:
                    inv.result = support_agent(inv.task, [], scenario.stream)
langfuse.shutdown()
