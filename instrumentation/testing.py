"""pytest plugin: the ``loopsight_spans`` fixture captures spans in memory.

Registered through the ``pytest11`` entry point, so any project with loopsight installed
can write::

    def test_my_agent(loopsight_spans):
        my_agent("where is order 42?")
        run = loopsight_spans.by_name("invoke_agent")[0]
        assert run.attributes["loopsight.termination.reason"] == "completed"

Span and trace ids are sequential (``...0001``, ``...0002``) and loopsight's clock is fake:
it starts at 2023-11-14T22:13:20Z and moves 1 ms each time it is read (``advance(s)``
jumps ahead), so timings and ids are the same on every run. The global TracerProvider is
left alone.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from . import nesting
from .state import STATE

EPOCH_NS = 1_700_000_000 * 1_000_000_000
TICK_NS = 1_000_000


class FakeClock:
    """Deterministic nanosecond clock: each read moves ``tick_ns`` forward."""

    def __init__(self, start_ns: int = EPOCH_NS, tick_ns: int = TICK_NS) -> None:
        self._counter = itertools.count()
        self._start = start_ns
        self._tick = tick_ns
        self._offset = 0

    def __call__(self) -> int:
        return self._start + self._offset + next(self._counter) * self._tick

    def advance(self, seconds: float) -> None:
        """Jump ahead (e.g. to simulate a slow tool)."""
        self._offset += int(seconds * 1_000_000_000)


class CapturedSpans:
    """Spans finished while the fixture is active, in end order."""

    def __init__(self) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from opentelemetry.sdk.trace.id_generator import IdGenerator

        class SequentialIds(IdGenerator):
            def __init__(self) -> None:
                self._spans = itertools.count(1)
                self._traces = itertools.count(1)

            def generate_span_id(self) -> int:
                return next(self._spans)

            def generate_trace_id(self) -> int:
                return next(self._traces)

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": "loopsight-test"}),
            id_generator=SequentialIds(),
            shutdown_on_exit=False,
        )
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        nesting.install(self.provider)
        self.clock = FakeClock()

    @property
    def spans(self) -> list[Any]:
        """Finished ReadableSpans, in the order they ended."""
        return list(self.exporter.get_finished_spans())

    def by_name(self, prefix: str) -> list[Any]:
        """Finished spans whose name starts with ``prefix`` (``"execute_tool"``, ``"chat gpt-4o"``)."""
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith(prefix)]

    def clear(self) -> None:
        """Forget the spans captured so far."""
        self.exporter.clear()

    def advance(self, seconds: float) -> None:
        """Move loopsight's fake clock forward."""
        self.clock.advance(seconds)

    def __len__(self) -> int:
        return len(self.exporter.get_finished_spans())


@pytest.fixture
def loopsight_spans() -> Iterator[CapturedSpans]:
    """Capture loopsight spans in memory for one test (deterministic ids and times)."""
    captured = CapturedSpans()
    saved = (STATE.provider, STATE.clock)
    STATE.provider = captured.provider
    STATE.clock = captured.clock
    try:
        yield captured
    finally:
        STATE.provider, STATE.clock = saved
        captured.provider.shutdown()
