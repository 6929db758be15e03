"""A full write queue: 503 + Retry-After over HTTP, UNAVAILABLE + RetryInfo over gRPC; the
real OTel exporters wait, retry and get their spans in once the writer catches up."""

from __future__ import annotations

import threading
import time

import grpc
import pytest
from google.rpc import status_pb2
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from spans import make_run, request_of
from starlette.testclient import TestClient

from loopsight.collector.app import Settings, create_app
from loopsight.collector.grpc_receiver import start_grpc
from loopsight.ingest.pipeline import prepare
from loopsight.stores.duckdb_store import Store

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _export(channel: grpc.Channel):
    return channel.unary_unary(
        EXPORT,
        request_serializer=ExportTraceServiceRequest.SerializeToString,
        response_deserializer=ExportTraceServiceResponse.FromString,
    )


@pytest.fixture
def blocked_store(tmp_path):
    """A real store whose writer is busy until ``release`` is set, with room for one batch."""
    store = Store.open(str(tmp_path / "bp.duckdb"), max_queue=1)
    release = threading.Event()
    store.run_job(lambda con: release.wait(60))
    filler = store.submit(prepare(request_of(make_run())).table)
    yield store, release, filler
    release.set()
    store.close()


def test_http_answers_503_with_retry_after_then_200(blocked_store):
    store, release, filler = blocked_store
    app = create_app(store, Settings(retry_after_seconds=3))
    body = request_of(make_run()).SerializeToString()
    with TestClient(app) as client:
        response = client.post("/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf"})
        assert response.status_code == 503
        assert response.headers["Retry-After"] == "3"
        release.set()
        filler.result(timeout=30)
        assert (
            client.post("/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf"}).status_code
            == 200
        )
        metrics = client.get("/metrics").text
    assert 'loopsight_spans_rejected_total{reason="queue_full"} 4' in metrics
    assert 'loopsight_export_requests_total{transport="http",outcome="queue_full"} 1' in metrics
    assert store.reader().execute("SELECT count(*) FROM spans").fetchone()[0] == 8


def _finished_spans(n_tools: int = 2):
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bp")
    with tracer.start_as_current_span("invoke_agent bp", attributes={"gen_ai.operation.name": "invoke_agent"}):
        for _i in range(n_tools):
            with tracer.start_as_current_span("execute_tool t", attributes={"gen_ai.tool.name": "t"}):
                pass
    provider.shutdown()
    return memory.get_finished_spans()


def test_grpc_unavailable_carries_retry_info_and_the_sdk_exporter_retries(blocked_store, free_tcp_port):
    store, release, _filler = blocked_store
    app = create_app(store, Settings())
    port = free_tcp_port()
    server = start_grpc(app.state.receiver, "127.0.0.1", port, retry_after_seconds=1)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            export = _export(channel)
            with pytest.raises(grpc.RpcError) as caught:
                export(request_of(make_run()), timeout=10)
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
            trailers = dict(caught.value.trailing_metadata())
            retry = RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
            assert retry.retry_delay.seconds == 1
            # Go exporters (the OTel Collector's too) read RetryInfo from the rich status
            rich = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
            assert rich.code == grpc.StatusCode.UNAVAILABLE.value[0] and "queue" in rich.message
            [detail] = rich.details
            unpacked = RetryInfo()
            assert detail.Unpack(unpacked) and unpacked.retry_delay.seconds == 1

        exporter = GrpcExporter(endpoint=f"127.0.0.1:{port}", insecure=True, timeout=30)
        results: list[SpanExportResult] = []
        worker = threading.Thread(target=lambda: results.append(exporter.export(_finished_spans(2))))
        worker.start()
        time.sleep(1.5)  # the exporter has met UNAVAILABLE at least once by now
        release.set()
        worker.join(60)
        exporter.shutdown()
        assert results == [SpanExportResult.SUCCESS]
        metrics = app.state.metrics.render()
        assert 'loopsight_export_requests_total{transport="grpc",outcome="queue_full"}' in metrics
        assert 'loopsight_spans_accepted_total{transport="grpc"} 3' in metrics
    finally:
        server.stop(grace=None)


def test_a_burst_of_grpc_exports_waits_its_turn_instead_of_resource_exhausted(tmp_path, free_tcp_port):
    """64 exports at once while the writer is busy: gRPC's own concurrency cap answered the 33rd on
    with RESOURCE_EXHAUSTED and no RetryInfo, which the Go exporters drop; now they queue for a worker."""
    store = Store.open(str(tmp_path / "burst.duckdb"))
    release = threading.Event()
    app = create_app(store, Settings())
    port = free_tcp_port()
    server = start_grpc(app.state.receiver, "127.0.0.1", port, workers=4)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            export = _export(channel)
            export(request_of(make_run(tools=1)), timeout=30)  # connected before the burst
            store.run_job(lambda con: release.wait(60))
            calls = [export.future(request_of(make_run(tools=1)), timeout=60) for _ in range(64)]
            time.sleep(1.0)  # every call has reached the server while the writer is held
            release.set()
            codes: list[object] = []
            for call in calls:
                try:
                    call.result()
                    codes.append(grpc.StatusCode.OK)
                except grpc.RpcError as exc:
                    codes.append((exc.code(), exc.details()))
        assert codes == [grpc.StatusCode.OK] * 64
        assert store.reader().execute("SELECT count(*) FROM spans").fetchone()[0] == 65 * 3
    finally:
        server.stop(grace=None)
        release.set()
        store.close()


def test_extra_metrics_hook_adds_gauges_and_a_broken_one_does_not_break_metrics(store):
    app = create_app(store, Settings())
    app.state.metrics.extra_metrics.append(lambda: "# TYPE loopsight_alert_firing gauge\nloopsight_alert_firing 2")
    app.state.metrics.extra_metrics.append(lambda: 1 / 0)
    with TestClient(app) as client:
        response = client.get("/metrics")
    assert response.status_code == 200
    assert "\nloopsight_alert_firing 2\n" in response.text
    assert "# extra metrics failed: division by zero" in response.text
