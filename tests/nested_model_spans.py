"""Runs whose model calls nest another instrumentation's llm span inside ours (real OTel SDK spans).

The official openai-v2 instrumentor opens its ``chat`` span inside our ``@loopsight.llm``
span; the derive and ClickHouse parity tests both build their runs here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from spans import memory_tracer

T0 = 1_767_000_000_000_000_000
MS = 1_000_000
TURNS = 3


def nested_model_spans(runs: Sequence[tuple[str, bool]] = (("helper", True),)) -> list[ReadableSpan]:
    """One run per ``(agent, numbered)``: invoke_agent > [our chat > their chat (tokens), execute_tool] x TURNS.

    The last turn nests a third chat span; with ``numbered`` False the producer gives no steps.
    """
    with memory_tracer("nested-test") as (tracer, exporter):
        now = [T0]

        def tick() -> int:
            now[0] += 10 * MS
            return now[0]

        def span(name: str, attrs: dict[str, Any]) -> Any:
            return tracer.start_as_current_span(name, attributes=attrs, start_time=tick(), end_on_exit=False)

        chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"}
        for agent, numbered in runs:
            with span(
                f"invoke_agent {agent}",
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": agent,
                    "loopsight.termination_reason": "completed",
                },
            ) as run:
                for step in range(TURNS):
                    ours_attrs = (
                        {**chat, "loopsight.step": step, "loopsight.usage.in_child": True} if numbered else chat
                    )
                    with span("chat gpt-4o-mini", ours_attrs) as ours:
                        usage = {"gen_ai.usage.input_tokens": 100 * (step + 1), "gen_ai.usage.output_tokens": 7}
                        with span("chat gpt-4o-mini", {**chat, **usage}) as theirs:
                            if step == TURNS - 1:
                                with span("chat gpt-4o-mini", chat) as deeper:
                                    deeper.end(end_time=tick())
                            theirs.end(end_time=tick())
                        ours.end(end_time=tick())
                    tool_attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}
                    with span(
                        "execute_tool search", {**tool_attrs, "loopsight.step": step} if numbered else tool_attrs
                    ) as tool:
                        tool.end(end_time=tick())
                run.end(end_time=tick())
        return list(exporter.get_finished_spans())


def model_in_tool_spans(numbered: bool = False) -> list[ReadableSpan]:
    """One run: chat, execute_tool summarize > chat (a tool that summarises with a model), chat,
    execute_tool search. With ``numbered`` the producer gives the steps the decorators give (0, 0, 0, 1, 1)."""
    with memory_tracer("model-in-tool-test") as (tracer, exporter):
        now = [T0]

        def tick() -> int:
            now[0] += 10 * MS
            return now[0]

        def span(name: str, attrs: dict[str, Any], step: int) -> Any:
            attrs = {**attrs, "loopsight.step": step} if numbered else attrs
            return tracer.start_as_current_span(name, attributes=attrs, start_time=tick(), end_on_exit=False)

        chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 50}
        agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "summarizer"}
        with tracer.start_as_current_span(
            "invoke_agent summarizer", attributes=agent, start_time=tick(), end_on_exit=False
        ) as run:
            for step, tool in enumerate(("summarize", "search")):
                with span("chat gpt-4o-mini", chat, step) as turn:
                    turn.end(end_time=tick())
                tool_attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool}
                with span(f"execute_tool {tool}", tool_attrs, step) as called:
                    if tool == "summarize":
                        with span("chat gpt-4o-mini", chat, step) as inner:
                            inner.end(end_time=tick())
                    called.end(end_time=tick())
            run.end(end_time=tick())
        return list(exporter.get_finished_spans())
