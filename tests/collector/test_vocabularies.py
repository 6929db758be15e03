"""Spans from other GenAI instrumentations fill the same typed columns.

Three come from the real packages (OTel ``openai-v2``, OpenInference, Traceloop) driving the
real ``openai`` client against a loopback fake; Pydantic AI and Langfuse are recorded OTLP
JSON written from their documented attribute names.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import serve_fake_openai
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from loopsight import analytics
from loopsight.collector.ingest import iter_requests
from loopsight.stores import ingest_request

HERE = Path(__file__).parent
PRODUCERS = ("openai-v2", "openinference", "traceloop")
CONTENT_MARKERS = ("Where is order", "A-1", "shipped", "Paris", "refund order", "sunny")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict[str, Path]:
    """Run the three producers in parallel against one fake OpenAI server."""
    out = tmp_path_factory.mktemp("producers")
    server = serve_fake_openai()
    url = next(server)
    env = {**os.environ, "TRACELOOP_TELEMETRY": "false", "OTEL_SDK_DISABLED": "false"}
    running = {
        name: subprocess.Popen(
            [sys.executable, str(HERE / "genai_producers.py"), name, url, str(out / f"{name}.pb")],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        for name in PRODUCERS
    }
    for name, process in running.items():
        output, _ = process.communicate(timeout=180)
        assert process.returncode == 0, f"{name} producer failed:\n{output}"
    next(server, None)
    return {name: out / f"{name}.pb" for name in PRODUCERS}


def ingest(store, path: Path) -> list[dict]:
    for request in iter_requests(path):
        ingest_request(store, request)
    cursor = store.reader().execute(
        'SELECT "ServiceName" AS service, "SpanName" AS name, span_type, agent, run_id, step, tool, args_hash, model, '
        'input_tokens, output_tokens, error_type, error_class, termination_reason, "SpanId" AS span_id, '
        'map_keys("SpanAttributes") AS keys, map_values("SpanAttributes") AS values FROM spans ORDER BY "Timestamp"'
    )
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=False)) for row in cursor.fetchall()]


def run_ending(store) -> tuple[str, str, str]:
    """The one run's agent, status and termination reason, as the API reports them."""
    (run,) = analytics.list_runs(store.reader())
    return run["agent"], run["status"], run["termination_reason"]


def assert_no_content(rows: list[dict]) -> None:
    for row in rows:
        for value in row["values"]:
            assert not any(marker in value for marker in CONTENT_MARKERS), (row["name"], value)


@pytest.mark.parametrize("producer", PRODUCERS)
def test_real_instrumentations_give_runs_steps_tokens_and_tool_calls(store, recorded, producer):
    rows = ingest(store, recorded[producer])
    [run] = [r for r in rows if r["span_type"] == "agent"]
    llm = [r for r in rows if r["span_type"] == "llm"]
    [tool] = [r for r in rows if r["span_type"] == "tool"]
    assert run["agent"] == "order-assistant" and run["termination_reason"] is None  # nothing said on the span
    assert run_ending(store) == ("order-assistant", "ok", "completed")  # decided over the run's agent spans
    assert all(r["run_id"] == run["span_id"] for r in rows)
    assert [(r["model"], r["input_tokens"], r["output_tokens"], r["step"]) for r in llm] == [
        ("gpt-4o-mini", 42, 12, 0),
        ("gpt-4o-mini", 61, 9, 1),
    ]
    assert tool["tool"] == "get_order" and tool["step"] == 0
    assert tool["args_hash"] is not None and len(tool["args_hash"]) == 16
    if producer != "traceloop":  # both saw the raw arguments {"order_id": "A-1"}: same canonical hash
        assert tool["args_hash"] == hashlib.sha256(b'{"order_id":"A-1"}').hexdigest()[:16]
    assert_no_content(rows)


def test_pydantic_ai_recording(store):
    rows = ingest(store, HERE / "fixtures" / "pydantic_ai.json")
    by_kind = {}
    for row in rows:
        by_kind.setdefault(row["span_type"], []).append(row)
    [run] = by_kind["agent"]
    assert run["agent"] == "weather_agent" and run["name"] == "agent run"
    assert run["input_tokens"] is None  # the aggregated run usage is not counted again
    assert [(r["input_tokens"], r["output_tokens"], r["step"]) for r in by_kind["llm"]] == [(57, 16, 0), (98, 21, 1)]
    [tool] = by_kind["tool"]
    assert (tool["tool"], tool["step"], tool["error_type"], tool["error_class"]) == (
        "get_weather",
        0,
        "TimeoutError",
        "transient",
    )
    assert tool["args_hash"] == hashlib.sha256(b'{"city":"Paris"}').hexdigest()[:16]
    assert {r["run_id"] for r in rows} == {run["span_id"]}
    assert_no_content(rows)


def test_langfuse_recording(store):
    rows = ingest(store, HERE / "fixtures" / "langfuse.json")
    kinds = {r["span_type"]: r for r in rows}
    assert kinds["agent"]["agent"] == "refund-agent"
    assert run_ending(store) == ("refund-agent", "ok", "completed")
    llm = kinds["llm"]
    assert (llm["model"], llm["input_tokens"], llm["output_tokens"], llm["step"]) == ("claude-sonnet-4", 120, 30, 0)
    tool = kinds["tool"]
    assert (tool["tool"], tool["error_type"], tool["error_class"], tool["step"]) == (
        "refund",
        "403 Forbidden",
        "fatal",
        0,
    )
    assert tool["args_hash"] is not None
    assert {r["run_id"] for r in rows} == {kinds["agent"]["span_id"]}
    assert_no_content(rows)


def test_requests_decode_the_same_from_protobuf_and_json(recorded, tmp_path):
    from google.protobuf import json_format

    request = ExportTraceServiceRequest.FromString(recorded["openai-v2"].read_bytes())
    as_json = json_format.MessageToDict(request)
    for resource in as_json["resourceSpans"]:  # OTLP/JSON spells ids in hex
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    path = tmp_path / "one.json"
    path.write_text(json.dumps(as_json))
    [decoded] = list(iter_requests(path))
    assert decoded == request
