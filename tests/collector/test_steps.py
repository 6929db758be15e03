"""Steps the writer derives for producers that do not number them, from real OTel SDK spans.

A run's llm spans are numbered by start time and each tool span takes the step of the last
llm span started before it. An llm span nested under an llm span (the official openai-v2
instrumentor's ``chat`` span inside our ``@loopsight.llm`` span) is part of that model call:
it takes its parent's step and the other llm spans are numbered as if it were not there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from spans import memory_tracer

from loopsight.ingest.pipeline import spans_to_request
from loopsight.stores import ingest_request

T0 = 1_767_000_000_000_000_000
MS = 1_000_000


class Clock:
    """Explicit, increasing start/end times so the order of calls is unambiguous."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        self.now += MS
        return self.now


@pytest.fixture
def sdk() -> Iterator[tuple[Any, InMemorySpanExporter]]:
    with memory_tracer("steps-test") as pair:
        yield pair


def _span(tracer: Any, clock: Clock, name: str, attrs: dict[str, Any]) -> Any:
    return tracer.start_as_current_span(name, attributes=attrs, start_time=clock(), end_on_exit=False)


def _run(tracer: Any, clock: Clock, our_steps: bool) -> None:
    """invoke_agent > [chat > chat (nested), execute_tool] x 2, then a nested chat two levels deep."""
    with _span(
        tracer, clock, "invoke_agent helper", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"}
    ) as run:
        for step in range(3):
            ours = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "loopsight.usage.in_child": True,
            }
            if our_steps:
                ours["loopsight.step"] = step
            with _span(tracer, clock, "chat gpt-4o-mini", ours) as model_call:
                theirs = {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.usage.input_tokens": 10,
                    "gen_ai.usage.output_tokens": 2,
                }
                with _span(tracer, clock, "chat gpt-4o-mini", theirs) as official:
                    if step == 2:
                        with _span(tracer, clock, "chat gpt-4o-mini", theirs) as deeper:
                            deeper.end(end_time=clock())
                    official.end(end_time=clock())
                model_call.end(end_time=clock())
            if step < 2:
                with _span(
                    tracer,
                    clock,
                    "execute_tool search",
                    {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"},
                ) as tool:
                    tool.end(end_time=clock())
        run.end(end_time=clock())


def _steps(store: Any) -> list[tuple[str, str | None, int | None]]:
    """(kind, parent kind, step) per llm/tool span in start order."""
    return (
        store.reader()
        .execute(
            """SELECT s.span_type, p.span_type, s.step FROM spans s LEFT JOIN spans p ON p."SpanId" = s."ParentSpanId"
           WHERE s.span_type IN ('llm', 'tool') ORDER BY s."Timestamp" """
        )
        .fetchall()
    )


EXPECTED = [
    ("llm", "agent", 0),
    ("llm", "llm", 0),
    ("tool", "agent", 0),
    ("llm", "agent", 1),
    ("llm", "llm", 1),
    ("tool", "agent", 1),
    ("llm", "agent", 2),
    ("llm", "llm", 2),
    ("llm", "llm", 2),
]


@pytest.mark.parametrize("our_steps", [False, True], ids=["no-producer-steps", "our-llm-spans-numbered"])
def test_nested_llm_spans_take_their_parents_step(
    store: Any, sdk: tuple[Any, InMemorySpanExporter], our_steps: bool
) -> None:
    tracer, exporter = sdk
    _run(tracer, Clock(), our_steps)
    spans = exporter.get_finished_spans()
    # Children end (and are exported) before their parents: the run span arrives last, alone.
    assert spans[-1].name == "invoke_agent helper"
    ingest_request(store, spans_to_request(spans[:-1]))
    ingest_request(store, spans_to_request(spans[-1:]))
    assert _steps(store) == EXPECTED


def test_nested_llm_span_arriving_with_its_run_is_numbered_with_it(
    store: Any, sdk: tuple[Any, InMemorySpanExporter]
) -> None:
    tracer, exporter = sdk
    _run(tracer, Clock(), our_steps=False)
    ingest_request(store, spans_to_request(exporter.get_finished_spans()))
    assert _steps(store) == EXPECTED
