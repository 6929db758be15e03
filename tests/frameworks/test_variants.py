"""What real users send that the recordings do not: a recorded scenario with one thing changed the
way the framework would change it (another limit, another shape), ingested through the real
pipeline into a real DuckDB store, read back as runs."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from loopsight import analytics  # noqa: E402
from loopsight.stores import ingest_request  # noqa: E402
from loopsight.stores.duckdb_store import Store  # noqa: E402
from recorder.matrix import iter_spans, load_requests, shift_to_now  # noqa: E402

pytestmark = pytest.mark.frameworks
RECORDINGS = ROOT / "tests" / "frameworks" / "recordings"


def runs_of(tmp_path: Path, config: str, scenario: str, edit: Callable[[Any], None]) -> list[dict[str, Any]]:
    """The runs of a recording whose every span went through ``edit`` first."""
    requests = load_requests(RECORDINGS / config / scenario)
    for _, _, span in iter_spans(requests):
        edit(span)
    shift_to_now(requests)
    store = Store.open(str(tmp_path / "variant.duckdb"))
    try:
        for request in requests:
            ingest_request(store, request)
        return analytics.list_runs(store.reader())
    finally:
        store.close()


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("The next request would exceed the request_limit of 5", "max_steps"),  # as recorded
        ("The next tool call(s) would exceed the tool_calls_limit of 4 (tool_calls=5).", "max_tool_calls"),
        ("Exceeded the total_tokens_limit of 1000 (total_tokens=1150)", "token_budget"),
        ("Exceeded the input_tokens_limit of 1000 (input_tokens=1050)", "token_budget"),
        ("Exceeded the output_tokens_limit of 90 (output_tokens=100)", "token_budget"),
    ],
)
def test_pydantic_ai_usage_limits_end_runs_with_the_limit_that_stopped_them(
    tmp_path: Path, message: str, reason: str
) -> None:
    """Pydantic AI raises one ``UsageLimitExceeded`` for every limit of ``UsageLimits``: the message
    names the limit, and the run's termination reason is that limit's, not always ``max_steps``."""

    def edit(span: Any) -> None:
        if span.status.message.startswith("UsageLimitExceeded: "):
            span.status.message = f"UsageLimitExceeded: {message}"
            for event in span.events:
                for kv in event.attributes:
                    if kv.key == "exception.message":
                        kv.value.string_value = message

    (run,) = runs_of(tmp_path, "pydantic_ai", "turn_limit", edit)
    assert (run["status"], run["termination_reason"]) == ("error", reason)


def test_another_instrumentations_model_span_inside_the_frameworks_counts_its_tokens_once(tmp_path: Path) -> None:
    """OpenInference's LangChain and OpenAI instrumentors both on (Phoenix's ``auto_instrument``):
    the OpenAI client's ``ChatCompletion`` span sits inside each ``ChatOpenAI`` span with the same
    usage. One model call per turn, its tokens (and their cost) counted once."""
    requests = load_requests(RECORDINGS / "langgraph_openinference" / "single")
    inner = []
    for _, _, span in iter_spans(requests):
        if span.name == "ChatOpenAI":
            client = Span()
            client.CopyFrom(span)
            client.span_id, client.parent_span_id, client.name = os.urandom(8), span.span_id, "ChatCompletion"
            inner.append(client)
    requests[0].resource_spans[0].scope_spans.append(
        ScopeSpans(scope=InstrumentationScope(name="openinference.instrumentation.openai"), spans=inner)
    )
    shift_to_now(requests)
    store = Store.open(str(tmp_path / "nested.duckdb"))
    try:
        for request in requests:
            ingest_request(store, request)
        con = store.reader()
        (run,) = analytics.list_runs(con)
        step_tokens = con.execute("SELECT sum(tokens) FROM run_step_totals").fetchone()[0]
        call_tokens = con.execute("SELECT sum(input_tokens), sum(output_tokens), count(*) FROM run_calls").fetchone()
        detail_steps = analytics.trace_detail(con, run["trace_id"])["steps"]
    finally:
        store.close()
    assert len(inner) == 2
    assert (run["steps"], run["llm_calls"], run["input_tokens"], run["output_tokens"]) == (2, 2, 285, 37)
    assert step_tokens == 285 + 37
    assert call_tokens == (285, 37, 2)
    assert [(s["llm_calls"], s["input_tokens"]) for s in detail_steps] == [(1, 120), (1, 165)]


def test_a_managed_agents_steps_do_not_spend_its_managers_step_budget(tmp_path: Path) -> None:
    """smolagents with a managed agent: the manager (``max_steps=5``, 2 model calls) runs a sub-agent
    (``max_steps=5``, 5 model calls, it answered) inside its first step. Seven steps in the run, but
    neither agent went over its own budget: the run completed."""
    outer, inner = (load_requests(RECORDINGS / "smolagents" / s) for s in ("single", "exact"))
    manager = [span for _, _, span in iter_spans(outer)]
    managed = [span for _, _, span in iter_spans(inner)]
    step = next(span for span in manager if span.name == "Step 1")
    begin = min(span.start_time_unix_nano for span in managed)
    took = max(span.end_time_unix_nano for span in managed) - begin + 2_000
    for span in manager:  # the manager's later spans wait for the managed agent
        if span.start_time_unix_nano > step.start_time_unix_nano:
            span.start_time_unix_nano += took
            span.end_time_unix_nano += took
        elif span.end_time_unix_nano >= step.end_time_unix_nano:
            span.end_time_unix_nano += took
    for span in managed:
        span.trace_id = step.trace_id
        span.start_time_unix_nano += step.start_time_unix_nano + 1_000 - begin
        span.end_time_unix_nano += step.start_time_unix_nano + 1_000 - begin
        if span.name == "support_agent.run":
            span.name, span.parent_span_id = "researcher.run", step.span_id
    requests = outer + inner
    shift_to_now(requests)
    store = Store.open(str(tmp_path / "managed.duckdb"))
    try:
        for request in requests:
            ingest_request(store, request)
        (run,) = analytics.list_runs(store.reader())
    finally:
        store.close()
    assert (run["agent"], run["steps"], run["status"]) == ("support_agent", 7, "ok")
    assert run["termination_reason"] == "completed"
