"""An llm span nested under an llm span is part of that model call, not a call of its own.

Another instrumentation (the official openai-v2 instrumentor) opens its ``chat`` span inside
our ``@loopsight.llm`` span; the run must count one model call per turn, its tokens once, and
the stall rules must not judge the nested span as a call. Real OTel SDK spans, real ingest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loopsight import analytics
from loopsight.analytics.sql import load, rows
from loopsight.collector.pipeline import ingest_request, spans_to_request
from loopsight.collector.store import Store

T0 = 1_767_000_000_000_000_000
MS = 1_000_000
TURNS = 3


@pytest.fixture
def spans() -> Iterator[list[Any]]:
    """invoke_agent > [our chat > their chat (tokens), execute_tool] x TURNS; the last turn nests twice."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("nested-test")
    now = [T0]

    def tick() -> int:
        now[0] += 10 * MS
        return now[0]

    def span(name: str, attrs: dict[str, Any]) -> Any:
        return tracer.start_as_current_span(name, attributes=attrs, start_time=tick(), end_on_exit=False)

    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"}
    with span("invoke_agent helper", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper",
                                      "loopsight.termination_reason": "completed"}) as run:
        for step in range(TURNS):
            with span("chat gpt-4o-mini", {**chat, "loopsight.step": step, "loopsight.usage.in_child": True}) as ours:
                usage = {"gen_ai.usage.input_tokens": 100 * (step + 1), "gen_ai.usage.output_tokens": 7}
                with span("chat gpt-4o-mini", {**chat, **usage}) as theirs:
                    if step == TURNS - 1:
                        with span("chat gpt-4o-mini", chat) as deeper:
                            deeper.end(end_time=tick())
                    theirs.end(end_time=tick())
                ours.end(end_time=tick())
            with span("execute_tool search", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
                                              "loopsight.step": step}) as tool:
                tool.end(end_time=tick())
        run.end(end_time=tick())
    yield list(exporter.get_finished_spans())
    provider.shutdown()


def test_nested_model_spans_are_one_call_per_turn(tmp_path: Path, spans: list[Any]) -> None:
    store = Store.open(str(tmp_path / "s.duckdb"))
    try:
        ingest_request(store, spans_to_request(spans))
        con = store.reader()
        llm_spans = con.execute("SELECT count(*) FROM spans WHERE span_type = 'llm'").fetchone()[0]
        assert llm_spans == 2 * TURNS + 1  # the nesting really is in the store
        (run,) = analytics.list_runs(con)
        assert (run["steps"], run["llm_calls"], run["tool_calls"]) == (TURNS, TURNS, TURNS)
        assert (run["input_tokens"], run["output_tokens"]) == (100 + 200 + 300, 7 * TURNS)
        assert rows(con, load("derive_runs"))[0]["llm_calls"] == TURNS  # the rule over the spans agrees
        detail = analytics.trace_detail(con, run["trace_id"])
        assert [s["llm_calls"] for s in detail["steps"]] == [1] * TURNS
        judged = con.execute(
            "SELECT span_type, count(call_ms) FROM run_members WHERE span_type IN ('llm', 'tool') GROUP BY ALL ORDER BY ALL"
        ).fetchall()
        assert judged == [("llm", TURNS), ("tool", TURNS)]
    finally:
        store.close()
