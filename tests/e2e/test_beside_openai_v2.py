"""Our decorators beside the official openai-v2 instrumentor: its chat spans nest under our
model call, and the run's tokens are counted once (real packages, fake OpenAI on loopback)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "collector"))
from fake_openai import serve_fake_openai

AGENT = textwrap.dedent(
    """
    import sys
    import loopsight
    import openai
    from opentelemetry import trace
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    provider = loopsight.configure(endpoint=sys.argv[1], service_name="beside-v2")
    OpenAIInstrumentor().instrument(tracer_provider=trace.get_tracer_provider())
    client = openai.OpenAI(base_url=sys.argv[2], api_key="sk-test", max_retries=0)
    TOOLS = [{"type": "function", "function": {"name": "get_order", "parameters": {"type": "object"}}}]

    @loopsight.llm(model="gpt-4o-mini")
    def call_model(messages):
        return client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)

    @loopsight.tool
    def get_order(order_id: str) -> dict:
        return {"status": "shipped"}

    @loopsight.agent(name="order-assistant")
    def run():
        messages = [{"role": "user", "content": "Where is A-1?"}]
        first = call_model(messages)
        call = first.choices[0].message.tool_calls[0]
        get_order(order_id="A-1")
        messages += [first.choices[0].message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": "shipped"}]
        return call_model(messages).choices[0].message.content

    print(run())
    loopsight.shutdown()
    """
)


@pytest.fixture
def fake_openai() -> Iterator[str]:
    yield from serve_fake_openai()


def test_official_chat_spans_nest_under_ours_and_tokens_count_once(
    collector_server, fake_openai: str, tmp_path: Path
) -> None:
    pytest.importorskip("opentelemetry.instrumentation.openai_v2")
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    done = subprocess.run(
        [sys.executable, str(script), collector_server.url, fake_openai], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "shipped" in done.stdout

    runs = httpx.get(f"{collector_server.url}/api/v1/runs").json()["runs"]
    assert len(runs) == 1
    run = runs[0]
    assert (run["input_tokens"], run["output_tokens"]) == (42 + 61, 12 + 9)  # the fake server's usage, once
    assert (run["llm_calls"], run["steps"]) == (2, 2)  # the nested chat span is not a model call of its own
    spans = httpx.get(f"{collector_server.url}/api/v1/runs/{run['trace_id']}").json()["spans"]
    ours = [s for s in spans if s["kind"] == "llm" and s["attributes"].get("loopsight.step") is not None]
    theirs = [s for s in spans if s["kind"] == "llm" and s["attributes"].get("loopsight.step") is None]
    assert len(ours) == 2 and len(theirs) == 2
    assert {s["parent_span_id"] for s in theirs} == {s["span_id"] for s in ours}
    assert all(s["attributes"].get("loopsight.usage.in_child") == "true" for s in ours)
    step_of = {s["span_id"]: s["step"] for s in ours}
    assert sorted(step_of.values()) == [0, 1]
    assert all(s["step"] == step_of[s["parent_span_id"]] for s in theirs)
