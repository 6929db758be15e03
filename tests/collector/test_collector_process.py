"""A real collector process fed by the real OTel SDK exporters (HTTP and gRPC, with a token):
spans land once (dedup), /metrics counts them, gRPC rejects bad input and bad tokens."""

from __future__ import annotations

import grpc
import httpx
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from spans import make_run, request_of

TOKEN = "s3cret-token"
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@pytest.fixture(scope="module")
def server(collector_launcher):
    server = collector_launcher(token=TOKEN)
    yield server
    server.stop()


def api(server, path: str) -> dict:
    response = httpx.get(server.url + path, headers=server.headers, timeout=30)
    response.raise_for_status()
    return response.json()


def run_agent(exporter, agent: str, tools: int) -> str:
    provider = TracerProvider(resource=Resource.create({"service.name": f"svc-{agent}"}))
    provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=4))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span(
        f"invoke_agent {agent}",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "loopsight.termination.reason": "max_steps",
        },
    ) as run:
        for step in range(tools):
            with tracer.start_as_current_span(
                "chat gpt-4o",
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.usage.input_tokens": 100 * (step + 1),
                    "gen_ai.usage.output_tokens": 7,
                    "loopsight.step": step,
                },
            ):
                pass
            with tracer.start_as_current_span(
                "execute_tool lookup",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup",
                    "loopsight.step": step,
                    "loopsight.tool.args_hash": "00000000000000aa",
                },
            ):
                pass
        trace_id = format(run.get_span_context().trace_id, "032x")
    provider.shutdown()
    return trace_id


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_sdk_exporter_spans_come_back_from_the_api(server, transport):
    if transport == "http":
        exporter = HttpExporter(endpoint=server.traces_url, headers=server.headers, timeout=30)
    else:
        exporter = GrpcExporter(
            endpoint=server.grpc_target, insecure=True, headers={"authorization": f"Bearer {TOKEN}"}, timeout=30
        )
    trace_id = run_agent(exporter, f"agent-{transport}", tools=3)
    detail = api(server, f"/api/v1/runs/{trace_id}")
    [run] = detail["runs"]
    assert run["agent"] == f"agent-{transport}" and run["service"] == f"svc-agent-{transport}"
    assert (run["steps"], run["llm_calls"], run["tool_calls"]) == (3, 3, 3)
    assert run["input_tokens"] == 600 and run["output_tokens"] == 21
    assert run["termination_reason"] == "max_steps"
    assert len(detail["spans"]) == 7
    assert {s["kind"] for s in detail["spans"]} == {"agent", "llm", "tool"}


def test_wrong_token_is_refused_on_both_transports(server):
    http = HttpExporter(endpoint=server.traces_url, headers={"Authorization": "Bearer nope"}, timeout=10)
    trace_id = run_agent(http, "intruder", tools=1)
    assert httpx.get(f"{server.url}/api/v1/runs/{trace_id}", headers=server.headers, timeout=30).status_code == 404
    with grpc.insecure_channel(server.grpc_target) as channel:
        export = channel.unary_unary(
            EXPORT,
            request_serializer=lambda r: r.SerializeToString(),
            response_deserializer=ExportTraceServiceResponse.FromString,
        )
        with pytest.raises(grpc.RpcError) as caught:
            export(request_of(make_run()), metadata=(("authorization", "Bearer nope"),), timeout=10)
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as caught:
            export(request_of(make_run()), timeout=10)
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_grpc_malformed_body_is_invalid_argument_and_partial_success_is_reported(server):
    with grpc.insecure_channel(server.grpc_target) as channel:
        raw = channel.unary_unary(
            EXPORT, request_serializer=lambda b: b, response_deserializer=ExportTraceServiceResponse.FromString
        )
        with pytest.raises(grpc.RpcError) as caught:
            raw(b"\xff\xff\xff\xff not protobuf", metadata=(("authorization", f"Bearer {TOKEN}"),), timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "malformed" in caught.value.details()

        spans = make_run(tools=1)
        spans[0].span_id = b"\x01\x02"
        response = raw(
            request_of(spans).SerializeToString(), metadata=(("authorization", f"Bearer {TOKEN}"),), timeout=10
        )
        assert response.partial_success.rejected_spans == 1
        assert "invalid trace_id or span_id length" in response.partial_success.error_message


def duplicates(server) -> int:
    return int(server.metrics()["loopsight_spans_duplicate_total"])


def test_a_span_delivered_twice_is_counted_once_everywhere(server):
    before = duplicates(server)
    spans = make_run(tools=2, agent="twice")
    trace_id = spans[0].trace_id.hex()
    body = request_of(spans).SerializeToString()
    headers = {**server.headers, "Content-Type": "application/x-protobuf"}
    for _ in range(2):  # an exporter retry after a lost answer
        assert httpx.post(server.traces_url, content=body, headers=headers, timeout=30).status_code == 200
    # the same spans again, split differently and mixed with a repeat inside one request
    assert (
        httpx.post(
            server.traces_url,
            content=request_of(spans[:2] + spans[:1]).SerializeToString(),
            headers=headers,
            timeout=30,
        ).status_code
        == 200
    )
    with grpc.insecure_channel(server.grpc_target) as channel:
        export = channel.unary_unary(
            EXPORT,
            request_serializer=lambda r: r.SerializeToString(),
            response_deserializer=ExportTraceServiceResponse.FromString,
        )
        export(request_of(spans), metadata=(("authorization", f"Bearer {TOKEN}"),), timeout=10)
    detail = api(server, f"/api/v1/runs/{trace_id}")
    assert len(detail["spans"]) == 4
    [run] = detail["runs"]
    assert (run["tool_calls"], run["llm_calls"], run["input_tokens"]) == (2, 1, 100)
    assert [r["trace_id"] for r in api(server, "/api/v1/runs?agent=twice")["runs"]] == [trace_id]
    assert duplicates(server) - before == 4 + 3 + 4


def test_metrics_expose_ingest_queue_commit_and_db_size(server):
    text = httpx.get(server.url + "/metrics", headers=server.headers, timeout=30).text
    for family in (
        "loopsight_spans_received_total",
        "loopsight_spans_accepted_total",
        "loopsight_spans_rejected_total",
        "loopsight_spans_stored_total",
        "loopsight_write_queue_batches",
        "loopsight_write_queue_spans",
        "loopsight_commit_seconds_bucket",
        "loopsight_commit_seconds_count",
        "loopsight_db_size_bytes",
        "loopsight_commit_failures_total",
        "loopsight_derive_pending_commits",
        "loopsight_derive_passes_total",
        "loopsight_derive_failures_total",
        "loopsight_derive_seconds_total",
    ):
        assert f"\n{family}" in text, family
    size = next(line for line in text.splitlines() if line.startswith("loopsight_db_size_bytes"))
    assert int(size.split()[-1]) > 0


def test_metrics_count_derive_passes_and_show_none_pending_once_read(server):
    before = server.metrics()
    trace_id = run_agent(
        HttpExporter(endpoint=server.traces_url, headers=server.headers, timeout=30), "metered", tools=2
    )
    assert api(server, f"/api/v1/runs/{trace_id}")["runs"]  # a read waits for the pass over the new spans
    after = server.metrics()
    assert after["loopsight_derive_passes_total"] > before["loopsight_derive_passes_total"]
    assert after["loopsight_derive_seconds_total"] > before["loopsight_derive_seconds_total"]
    assert after["loopsight_derive_pending_commits"] == 0
    assert after["loopsight_derive_failures_total"] == after["loopsight_commit_failures_total"] == 0
