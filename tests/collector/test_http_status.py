"""OTLP/HTTP status codes of a real collector process: 200, partial_success, 400, 401, 413, 415."""

from __future__ import annotations

import gzip
import json
import re
import zlib

import httpx
import pytest
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from spans import make_run, request_of

PB = {"Content-Type": "application/x-protobuf"}


@pytest.fixture(scope="module")
def server(collector_launcher):
    server = collector_launcher("--max-body-bytes", "200000", token="s3cret")
    yield server
    server.stop()


def post(server, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(server.traces_url, content=body, headers={**server.headers, **headers}, timeout=30)


def runs(server) -> list[dict]:
    return httpx.get(server.url + "/api/v1/runs", headers=server.headers, timeout=30).json()["runs"]


def test_protobuf_json_gzip_and_deflate_are_stored_and_answered_in_kind(server):
    before = len(runs(server))
    pb = request_of(make_run()).SerializeToString()
    response = post(server, pb, PB)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-protobuf"
    assert not ExportTraceServiceResponse.FromString(response.content).HasField("partial_success")

    assert (
        post(
            server, gzip.compress(request_of(make_run()).SerializeToString()), {**PB, "Content-Encoding": "gzip"}
        ).status_code
        == 200
    )
    assert (
        post(
            server, zlib.compress(request_of(make_run()).SerializeToString()), {**PB, "Content-Encoding": "deflate"}
        ).status_code
        == 200
    )

    trace_id = "ab" * 16
    run = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "json-agent"}}]},
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": "0102030405060708",
                                "name": "invoke_agent json",
                                "kind": 1,
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": "1700000001000000000",
                                "attributes": [
                                    {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                                    {"key": "gen_ai.agent.name", "value": {"stringValue": "json"}},
                                ],
                                "unknownField": {"ignored": True},
                            }
                        ]
                    }
                ],
            }
        ]
    }
    response = post(server, json.dumps(run).encode(), {"Content-Type": "application/json; charset=utf-8"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {}

    listed = runs(server)
    assert len(listed) == before + 4
    assert {r["agent"] for r in listed} >= {"helper", "json"}
    [json_run] = [r for r in listed if r["agent"] == "json"]
    assert json_run["trace_id"] == trace_id and json_run["service"] == "json-agent"


def test_snake_case_json_ids_are_hex_as_camel_case_ones(server):
    """The OTel Collector reads ``trace_id``/``span_id``/``parent_span_id`` in OTLP/JSON as hex too;
    they were read as base64 and the spans rejected for their length."""
    root = {
        "trace_id": "5e" * 16,
        "span_id": "0a" * 8,
        "name": "invoke_agent snake",
        "start_time_unix_nano": "1700000000000000000",
        "end_time_unix_nano": "1700000002000000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"string_value": "invoke_agent"}},
            {"key": "gen_ai.agent.name", "value": {"string_value": "snake"}},
        ],
    }
    tool = {
        "trace_id": "5e" * 16,
        "span_id": "0b" * 8,
        "parent_span_id": "0a" * 8,
        "name": "execute_tool search",
        "start_time_unix_nano": "1700000000500000000",
        "end_time_unix_nano": "1700000001000000000",
        "attributes": [{"key": "gen_ai.tool.name", "value": {"string_value": "search"}}],
    }
    body = json.dumps({"resource_spans": [{"scope_spans": [{"spans": [tool, root]}]}]}).encode()
    response = post(server, body, {"Content-Type": "application/json"})
    assert (response.status_code, response.json()) == (200, {})
    detail = httpx.get(server.url + "/api/v1/runs/" + "5e" * 16, headers=server.headers, timeout=30).json()
    assert [(r["agent"], r["tool_calls"]) for r in detail["runs"]] == [("snake", 1)]
    assert {(s["name"], s["parent_span_id"]) for s in detail["spans"]} == {
        ("invoke_agent snake", None),
        ("execute_tool search", "0a" * 8),
    }


def test_json_from_sdks_before_otlp_0_19_is_read_not_dropped(server):
    """Before 0.19 OTLP/JSON named scopes ``instrumentationLibrarySpans``: the request was
    answered 200 and nothing stored."""
    spans = [
        {
            "traceId": "6f" * 16,
            "spanId": "0c" * 8,
            "name": "invoke_agent legacy",
            "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000002000000000",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                {"key": "gen_ai.agent.name", "value": {"stringValue": "legacy"}},
            ],
        }
    ]
    scope = {"instrumentationLibrary": {"name": "old-sdk", "version": "0.16"}, "spans": spans}
    body = json.dumps({"resourceSpans": [{"instrumentationLibrarySpans": [scope]}]}).encode()
    response = post(server, body, {"Content-Type": "application/json"})
    assert (response.status_code, response.json()) == (200, {})
    detail = httpx.get(server.url + "/api/v1/runs/" + "6f" * 16, headers=server.headers, timeout=30).json()
    assert [r["agent"] for r in detail["runs"]] == ["legacy"]
    assert [s["name"] for s in detail["spans"]] == ["invoke_agent legacy"]


def rejected_by_reason(server) -> dict[str, float]:
    text = httpx.get(server.url + "/metrics", headers=server.headers, timeout=30).text
    found = re.findall(r'^loopsight_spans_rejected_total\{reason="([^"]*)"\} (\S+)$', text, re.M)
    return {reason: float(n) for reason, n in found}


def test_spans_with_bad_ids_are_reported_in_partial_success(server):
    before = len(runs(server))
    rejected_before = rejected_by_reason(server)
    spans = make_run(tools=1)
    spans.append(Span(trace_id=b"\x01" * 5, span_id=b"\x02" * 8, name="bad"))
    spans.append(Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 3, name="bad"))
    # OTLP: an all-zero id is invalid; stored, every sender's zero ids would share one trace
    spans.append(Span(trace_id=bytes(16), span_id=b"\x03" * 8, name="zero trace"))
    spans.append(Span(trace_id=b"\x04" * 16, span_id=bytes(8), name="zero span"))
    root = Span(
        trace_id=b"\x05" * 16,
        span_id=b"\x06" * 8,
        parent_span_id=bytes(8),
        name="invoke_agent zero-parent",
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_001_000_000_000,
    )
    spans.append(root)
    response = post(server, request_of(spans).SerializeToString(), PB)
    assert response.status_code == 200
    partial = ExportTraceServiceResponse.FromString(response.content).partial_success
    assert partial.rejected_spans == 4
    assert "invalid trace_id or span_id length (2)" in partial.error_message
    assert "all-zero trace_id or span_id (2)" in partial.error_message
    rejected = rejected_by_reason(server)  # one label for a bad id, whichever way it is bad
    assert rejected["invalid_id"] - rejected_before.get("invalid_id", 0) == 4
    assert all(re.fullmatch(r"[a-z_]+", reason) for reason in rejected), rejected
    assert len(runs(server)) == before + 2
    detail = httpx.get(server.url + "/api/v1/runs/" + "05" * 16, headers=server.headers, timeout=30).json()
    assert [(s["name"], s["parent_span_id"]) for s in detail["spans"]] == [("invoke_agent zero-parent", None)]  # a root


def test_a_gzip_body_of_several_members_is_read_whole(server):
    before = len(runs(server))
    body = b"".join(gzip.compress(request_of(make_run()).SerializeToString()) for _ in range(2))
    assert post(server, body, {**PB, "Content-Encoding": "gzip"}).status_code == 200
    assert len(runs(server)) == before + 2


@pytest.mark.parametrize(
    ("body", "headers", "status", "needle"),
    [
        (b"\xff\xff\xff\xff garbage", PB, 400, "malformed protobuf"),
        (b'{"resourceSpans": [', {"Content-Type": "application/json"}, 400, "malformed JSON"),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
            {"Content-Type": "application/json"},
            400,
            "not hex",
        ),
        (b"[1, 2]", {"Content-Type": "application/json"}, 400, "must be an object"),
        (gzip.compress(b"x")[:-6], {**PB, "Content-Encoding": "gzip"}, 400, "truncated"),
        (gzip.compress(b"") + b"not gzip", {**PB, "Content-Encoding": "gzip"}, 400, "not valid gzip"),
        (zlib.compress(b"") + b"tail", {**PB, "Content-Encoding": "deflate"}, 400, "after the end of the deflate data"),
        (b"hello", {"Content-Type": "text/plain"}, 415, "unsupported content type"),
        (b"hello", {**PB, "Content-Encoding": "br"}, 415, "unsupported content encoding"),
        (b"\x00" * 300_000, PB, 413, "limit"),
        # 64 MiB of zeros compresses to ~64 KiB: the cap stops decompression at 200 kB.
        (gzip.compress(b"\x00" * (64 << 20)), {**PB, "Content-Encoding": "gzip"}, 413, "after decompression"),
    ],
    ids=[
        "protobuf",
        "json",
        "json-ids",
        "json-array",
        "gzip-truncated",
        "gzip-trailing-garbage",
        "deflate-trailing-data",
        "media-type",
        "encoding",
        "too-large",
        "gzip-bomb",
    ],
)
def test_bad_requests_get_the_otlp_status_and_a_readable_message(server, body, headers, status, needle):
    response = post(server, body, headers)
    assert response.status_code == status
    if response.headers["content-type"] == "application/x-protobuf":
        message = status_pb2.Status.FromString(response.content).message
    else:
        message = response.json()["message"]
    assert needle in message
    assert httpx.get(server.url + "/healthz").status_code == 200


def test_token_is_required_everywhere_but_healthz(server):
    before = len(runs(server))
    body = request_of(make_run()).SerializeToString()
    assert httpx.post(server.traces_url, content=body, headers=PB).status_code == 401
    refused = httpx.post(server.traces_url, content=body, headers={**PB, "Authorization": "Bearer wrong"})
    assert (refused.status_code, refused.headers["content-type"]) == (401, "application/x-protobuf")  # OTLP: in kind
    assert status_pb2.Status.FromString(refused.content).code == code_pb2.UNAUTHENTICATED
    refused = httpx.post(server.traces_url, content=b"{}", headers={"Content-Type": "application/json"})
    assert (refused.status_code, refused.json()["code"]) == (401, code_pb2.UNAUTHENTICATED)
    assert httpx.get(server.url + "/api/v1/runs").status_code == 401
    assert httpx.get(server.url + "/metrics").status_code == 401
    assert httpx.get(server.url + "/healthz").status_code == 200
    assert len(runs(server)) == before
    token = server.headers["Authorization"].split(" ", 1)[1]
    assert (
        httpx.get(server.url + "/api/v1/runs", headers={"Authorization": f"bearer {token}"}).status_code == 200
    )  # scheme: any case


def test_query_api_errors_are_json_error_bodies(server):
    """/api/* answers {"error": ...} (401, 404, 405); elsewhere errors have the OTLP Status shape."""
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        refused = httpx.get(server.url + "/api/v1/runs", headers=headers)
        assert refused.status_code == 401
        assert refused.json() == {"error": "missing or wrong bearer token"}
        assert refused.headers["www-authenticate"] == "Bearer"
    for path in ("/api/v1/nope", f"/api/v1/runs/{'ab' * 16}/extra", "/api/nope", "//api/v1/runs"):
        missing = httpx.get(server.url + path, headers=server.headers)
        assert missing.status_code == 404, path
        assert missing.headers["content-type"] == "application/json"
        assert missing.json() == {"error": f"no route {path}"}
    wrong_method = httpx.post(server.url + "/api/v1/runs", headers=server.headers)
    assert wrong_method.status_code == 405
    assert set(wrong_method.headers["allow"].split(", ")) == {"GET", "HEAD"}
    assert wrong_method.json() == {"error": "method POST not allowed on /api/v1/runs (allowed: GET, HEAD)"}

    otlp = httpx.post(server.traces_url, content=request_of(make_run()).SerializeToString(), headers=PB)
    assert otlp.status_code == 401  # in the request's content type, as every /v1/traces answer
    assert status_pb2.Status.FromString(otlp.content) == status_pb2.Status(
        code=16, message="missing or wrong bearer token"
    )
    assert httpx.get(server.url + "/metrics").json() == {"code": 16, "message": "missing or wrong bearer token"}
    browsed = httpx.get(server.traces_url, headers=server.headers)  # outside /api/: the OTLP shape, never plain text
    assert browsed.status_code == 405 and browsed.headers["allow"] == "POST"
    assert browsed.json() == {"code": 12, "message": "method GET not allowed on /v1/traces (allowed: POST)"}
    nowhere = httpx.post(server.url + "/v1/logs", content=b"", headers={**server.headers, **PB})
    assert nowhere.status_code == 404
    assert status_pb2.Status.FromString(nowhere.content) == status_pb2.Status(code=5, message="no route /v1/logs")


def test_trace_detail_is_404_without_stored_spans(server):
    """A well-formed unknown trace id is a 404; a trace with spans but no run span is still a 200."""
    unknown = "cd" * 16
    missing = httpx.get(f"{server.url}/api/v1/runs/{unknown.upper()}", headers=server.headers, timeout=30)
    assert missing.status_code == 404
    assert missing.json() == {"error": f"no spans stored for trace {unknown}"}

    in_flight = make_run(tools=1)[:-1]  # the run span has not arrived yet
    assert post(server, request_of(in_flight).SerializeToString(), PB).status_code == 200
    found = httpx.get(f"{server.url}/api/v1/runs/{in_flight[0].trace_id.hex()}", headers=server.headers, timeout=30)
    assert found.status_code == 200
    assert found.json()["runs"] == [] and len(found.json()["spans"]) == 2


def test_a_client_gone_before_its_body_is_counted_not_logged_as_a_crash(collector_server):
    """An exporter that times out or loses its link part way through a body: Starlette raised
    ``ClientDisconnect`` out of the handler, and uvicorn logged "Exception in ASGI application"
    with a traceback each time (read as a collector crash); the request went uncounted."""
    import socket
    import time

    heads = (
        b"Content-Length: 100000\r\n\r\n" + b"\x0a" * 10,  # declared, cut short
        b"Transfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n",  # chunked, no last chunk
    )
    for head in heads:
        with socket.create_connection(("127.0.0.1", collector_server.http_port)) as sock:
            sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n" + head)
            time.sleep(0.3)
    key = 'loopsight_export_requests_total{transport="http",outcome="disconnected"}'
    deadline = time.monotonic() + 10
    while collector_server.metrics().get(key) != 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert collector_server.metrics().get(key) == 2
    answer = post(collector_server, request_of(make_run()).SerializeToString(), PB)
    assert answer.status_code == 200
    assert collector_server.metrics()["loopsight_inflight_requests"] == 0
    log = collector_server.log()
    assert "Traceback" not in log and "Exception in ASGI" not in log, log[-3000:]
