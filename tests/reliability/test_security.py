"""Bearer-token auth on OTLP/HTTP, OTLP/gRPC and the query API; loopback-only binding by default."""

from __future__ import annotations

import ipaddress
import subprocess
import sys
import time
from pathlib import Path

import grpc
import httpx
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from processes import stop_process
from reliability_support import listening_sockets, sdk_client, stored
from spans import request_of, tool_span

TOKEN = "s3cret-token-with-some-length"
WRONG = [
    None,
    "",
    "Bearer",
    f"Bearer {TOKEN[:-1]}",
    f"Bearer {TOKEN}x",
    f"Basic {TOKEN}",
    f"Bearer  {TOKEN}",
    TOKEN,
    f"Bearer {TOKEN.upper()}",
    "Bearer \u00e9\u00e9".encode(),
]


def _headers(value: str | bytes | None) -> dict[str, str | bytes]:
    return {} if value is None else {"Authorization": value}


def test_token_guards_otlp_http_query_api_and_grpc(start_collector) -> None:
    server = start_collector(token=TOKEN)
    body = request_of([tool_span(b"\x05" * 16, b"\x06" * 8, 1_700_000_000_000_000_000)]).SerializeToString()
    routes = [
        "/api/v1/runs",
        "/api/v1/runs/" + "05" * 16,
        "/api/v1/tools",
        "/api/v1/loops",
        "/api/v1/alerts",
        "/metrics",
    ]
    with httpx.Client(timeout=30) as client:
        for value in WRONG:
            headers = _headers(value)
            answer = client.post(
                server.traces_url, content=body, headers={**headers, "Content-Type": "application/x-protobuf"}
            )
            assert answer.status_code == 401, (value, answer.status_code)
            assert answer.headers.get("www-authenticate", "").lower().startswith("bearer")
            for route in routes:
                assert client.get(server.url + route, headers=headers).status_code == 401, (value, route)
        assert client.get(server.url + "/healthz").status_code == 200
        ok = client.post(
            server.traces_url,
            content=body,
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/x-protobuf"},
        )
        assert ok.status_code == 200, ok.text
        assert client.get(server.url + "/api/v1/runs", headers=server.headers).status_code == 200

    request = request_of([tool_span(b"\x07" * 16, b"\x08" * 8, 1_700_000_000_000_000_000)])
    with grpc.insecure_channel(server.grpc_target) as channel:
        export = channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            request_serializer=trace_service_pb2.ExportTraceServiceRequest.SerializeToString,
            response_deserializer=trace_service_pb2.ExportTraceServiceResponse.FromString,
        )
        for value in (None, f"Bearer {TOKEN}x", TOKEN, "Bearer", f"bearer {TOKEN[:-1]}"):
            metadata = None if value is None else [("authorization", value)]
            with pytest.raises(grpc.RpcError) as failure:
                export(request, metadata=metadata, timeout=30)
            assert failure.value.code() == grpc.StatusCode.UNAUTHENTICATED, value
        export(request, metadata=[("authorization", f"Bearer {TOKEN}")], timeout=30)

    # the real SDK exporter with the header configured gets through
    client = sdk_client(server.url, token=TOKEN, timeout=30)
    client.emit(5)
    assert client.provider.force_flush(30_000)
    client.provider.shutdown()
    assert client.exporter.acked == client.created

    assert server.stop() == 0
    ids = {row[0] for row in stored(server.db_path)}
    assert ids == {"06" * 8, "08" * 8} | client.created, "only authenticated spans are stored"


def test_token_comparison_is_constant_time() -> None:
    import inspect

    from loopsight.collector import app, grpc_receiver

    source = inspect.getsource(app.token_matches)
    assert "hmac.compare_digest" in source
    assert "token_matches" in inspect.getsource(grpc_receiver)


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)  # gRPC listens on [::ffff:127.0.0.1]
    return ip.is_loopback or bool(mapped and mapped.is_loopback)


def _wait_listening(pid: int, ports: set[int], timeout: float = 60.0) -> list[tuple[str, int]]:
    deadline = time.monotonic() + timeout
    found: list[tuple[str, int]] = []
    while time.monotonic() < deadline:
        found = listening_sockets(pid)
        if ports <= {port for _, port in found}:
            return found
        time.sleep(0.2)
    raise AssertionError(f"ports {ports} not all listening after {timeout}s: {found}")


def test_collector_binds_loopback_only_by_default(start_collector) -> None:
    server = start_collector()  # no --host
    sockets = _wait_listening(server.process.pid, {server.http_port, server.grpc_port})
    assert sockets and all(_loopback(addr) for addr, _ in sockets), sockets


def test_dashboard_binds_loopback_only_by_default(collector_server, tmp_path: Path) -> None:
    from ports import free_port

    port = free_port()
    log = open(tmp_path / "dashboard.log", "wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "loopsight", "dashboard", "--collector", collector_server.url, "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        sockets = _wait_listening(process.pid, {port}, timeout=90)
        assert all(_loopback(addr) for addr, _ in sockets), sockets
    finally:
        stop_process(process, timeout=20)
        log.close()
