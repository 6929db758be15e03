"""configure(): real OTLP exporters to a real collector (HTTP) and a real gRPC receiver."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from concurrent import futures

import httpx
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

import loopsight
from loopsight.instrumentation.state import STATE

AGENT_SCRIPT = """
import loopsight
loopsight.configure()

@loopsight.llm(model="gpt-4o")
def model(messages):
    return {"usage": {"prompt_tokens": 10, "completion_tokens": 2},
            "choices": [{"finish_reason": "tool_calls"}]}

@loopsight.tool
def lookup(order_id):
    return {"status": "shipped"}

@loopsight.agent(name="export-check", max_steps=5)
def run():
    model(["hi"])
    lookup("A1")
    model(["hi", "obs"])
    return "ok"

run()
loopsight.shutdown()
"""


@pytest.fixture
def restore_state():
    saved = STATE.provider
    yield
    STATE.provider = saved


def _wait_for_run(url: str, agent: str, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = httpx.get(f"{url}/api/v1/runs", params={"agent": agent}, timeout=5).json()["runs"]
        if runs:
            return runs[0]
        time.sleep(0.1)
    raise AssertionError(f"no run for {agent} arrived")


@pytest.mark.slow
def test_export_to_real_collector(collector_server, restore_state):
    """One collector (its start-up is the slow part) for both ways of configuring."""
    _env_configured_subprocess(collector_server)
    _explicit_provider_added_once(collector_server)


def _env_configured_subprocess(collector_server):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=collector_server.url,
        OTEL_SERVICE_NAME="svc-from-env",
        OTEL_EXPORTER_OTLP_TIMEOUT="30",
    )
    done = subprocess.run([sys.executable, "-c", AGENT_SCRIPT], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    run = _wait_for_run(collector_server.url, "export-check")
    assert run["service"] == "svc-from-env"
    assert run["termination_reason"] == "completed"
    assert run["status"] == "ok"
    detail = httpx.get(f"{collector_server.url}/api/v1/runs/{run['trace_id']}", timeout=5).json()
    by_name = {s["name"]: s for s in detail["spans"]}
    assert set(by_name) == {"invoke_agent export-check", "chat gpt-4o", "execute_tool lookup"}
    tool_span = by_name["execute_tool lookup"]
    assert tool_span["args_hash"] == loopsight.args_hash({"order_id": "A1"})
    assert tool_span["step"] == 0
    assert sum(s["input_tokens"] or 0 for s in detail["spans"] if s["kind"] == "llm") == 20


class _HttpReceiver:
    """A real OTLP/HTTP endpoint (protobuf) on a loopback port that keeps what it gets."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        self.requests: list = []
        self.headers: list = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    import gzip

                    body = gzip.decompress(body)
                receiver.requests.append((self.path, ExportTraceServiceRequest.FromString(body)))
                receiver.headers.append(dict(self.headers))
                out = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self):
        return [
            (rs.resource, s)
            for _, r in self.requests
            for rs in r.resource_spans
            for ss in rs.scope_spans
            for s in ss.spans
        ]


def test_otel_env_variables_are_honoured():
    receiver = _HttpReceiver()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
        env.update(
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
            OTEL_SERVICE_NAME="svc-env",
            OTEL_EXPORTER_OTLP_TIMEOUT="30",  # a loaded CI machine is slow
            OTEL_EXPORTER_OTLP_HEADERS="x-team=agents",
            OTEL_RESOURCE_ATTRIBUTES="deployment.environment=test",
        )
        done = subprocess.run([sys.executable, "-c", AGENT_SCRIPT], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert {path for path, _ in receiver.requests} == {"/v1/traces"}
        assert all(h.get("x-team") == "agents" for h in receiver.headers)
        spans = receiver.spans()
        assert sorted(s.name for _, s in spans) == [
            "chat gpt-4o",
            "chat gpt-4o",
            "execute_tool lookup",
            "invoke_agent export-check",
        ]
        resource = {a.key: a.value.string_value for a in spans[0][0].attributes}
        assert resource["service.name"] == "svc-env"
        assert resource["deployment.environment"] == "test"
        run = next(s for _, s in spans if s.name.startswith("invoke_agent"))
        attrs = {a.key: a.value for a in run.attributes}
        assert attrs["loopsight.termination.reason"].string_value == "completed"
        assert attrs["loopsight.budget.max_steps"].int_value == 5
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()


def _explicit_provider_added_once(collector_server):
    provider = TracerProvider(resource=Resource.create({"service.name": "svc-explicit"}))
    try:
        first = loopsight.configure(endpoint=collector_server.url, tracer_provider=provider)
        second = loopsight.configure(endpoint=collector_server.url + "/", tracer_provider=provider)
        assert first is second is provider
        loopsight.configure(endpoint=collector_server.traces_url, tracer_provider=provider)
        loopsight.configure(tracer_provider=provider)  # adopt, add nothing
        processors = provider._active_span_processor._span_processors
        assert [type(p).__name__ for p in processors] == ["BatchSpanProcessor", "NestedUsageProcessor"]

        with loopsight.agent("explicit-check"), loopsight.tool("t", args={"a": 1}):
            pass
        provider.force_flush()
        run = _wait_for_run(collector_server.url, "explicit-check")
        assert run["service"] == "svc-explicit"
        assert run["tool_calls"] == 1
    finally:
        loopsight.shutdown()
        provider.shutdown()


ADOPT_SCRIPT = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import loopsight

app_exporter = InMemorySpanExporter()
app_provider = TracerProvider()
app_provider.add_span_processor(SimpleSpanProcessor(app_exporter))
trace.set_tracer_provider(app_provider)          # the application's own set-up

assert loopsight.configure() is app_provider     # adopted: no exporter of ours added
assert loopsight.configure() is app_provider
names = lambda: [type(p).__name__ for p in app_provider._active_span_processor._span_processors]
assert names() == ["SimpleSpanProcessor", "NestedUsageProcessor"], names()
with loopsight.agent("adopted"):
    with loopsight.tool("t"):
        pass
print(sorted(s.name for s in app_exporter.get_finished_spans()))

# an explicit endpoint adds one exporter, once (no spans follow: nothing to send at exit)
loopsight.configure(endpoint="http://127.0.0.1:9")
loopsight.configure(endpoint="http://127.0.0.1:9/v1/traces")
assert names() == ["SimpleSpanProcessor", "NestedUsageProcessor", "BatchSpanProcessor"], names()
"""


def test_configure_adopts_the_applications_provider():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    done = subprocess.run([sys.executable, "-c", ADOPT_SCRIPT], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['execute_tool t', 'invoke_agent adopted']"


def test_bad_protocol_is_a_clear_error():
    with pytest.raises(ValueError, match="protocol must be one of"):
        loopsight.configure(protocol="carrier-pigeon")


def test_shutdown_is_idempotent():
    loopsight.shutdown()
    loopsight.shutdown()


class _Receiver:
    """A real OTLP/gRPC TraceService that keeps what it receives."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

        self.requests: list = []
        self.got = threading.Event()
        receiver = self

        class Service(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request, context):
                receiver.requests.append(request)
                receiver.got.set()
                return trace_service_pb2.ExportTraceServiceResponse()

        import grpc

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()


def test_grpc_export(restore_state):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.grpc")
    receiver = _Receiver()
    provider = TracerProvider(resource=Resource.create({"service.name": "svc-grpc"}))
    try:
        loopsight.configure(endpoint=f"http://127.0.0.1:{receiver.port}", protocol="grpc", tracer_provider=provider)
        with loopsight.agent("grpc-check"), loopsight.llm(model="m") as call:
            call.set_usage(input_tokens=5, output_tokens=1)
        provider.force_flush()
        assert receiver.got.wait(10)
        spans = [s for r in receiver.requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]
        assert sorted(s.name for s in spans) == ["chat m", "invoke_agent grpc-check"]
        resource = receiver.requests[0].resource_spans[0].resource
        assert {a.key: a.value.string_value for a in resource.attributes}["service.name"] == "svc-grpc"
    finally:
        loopsight.shutdown()
        provider.shutdown()
        receiver.server.stop(0)
