"""Hostile OTLP bodies: always 200/400/413/415 with a readable message, never 500; the
process stays up, and rows stored before are byte-for-byte unchanged afterwards."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Callable

import httpx
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from hostile_bodies import (
    gzip_bomb,
    json_body,
    many_attributes,
    nested_json,
    protobuf_body,
    request_with_deep_attribute,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from reliability_support import rows_checksum, rss_kib, stored
from spans import request_of, tool_span

PB = "application/x-protobuf"
JS = "application/json"
FUZZ = settings(
    max_examples=int(os.environ.get("LOOPSIGHT_FUZZ_EXAMPLES", "100")),
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def check_answer(response: httpx.Response, sent_as: str) -> None:
    """The contract for any body: a listed status and a readable answer."""
    assert response.status_code in (200, 400, 413, 415), (response.status_code, response.text[:500])
    if response.status_code == 200:
        body = ExportTraceServiceResponse()
        if sent_as.split(";")[0].strip().lower() == JS:
            json_format.Parse(response.text or "{}", body)
        else:
            body.ParseFromString(response.content)
        if body.partial_success.rejected_spans:
            assert body.partial_success.error_message
        return
    if response.headers.get("content-type", "").startswith(PB):
        status = status_pb2.Status()
        status.ParseFromString(response.content)  # OTLP/HTTP: errors as google.rpc.Status
        message = status.message
    else:
        doc = response.json()
        message = doc.get("message") or doc.get("error")
    assert isinstance(message, str) and message.strip(), response.content[:300]
    assert "Traceback" not in message


def _finish(server, ids: set[str], before: str) -> None:
    assert server.process.poll() is None, server.log()
    assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
    assert "Traceback" not in server.log(), server.log()[-3000:]
    assert server.stop() == 0, server.log()
    assert rows_checksum(server.db_path, ids) == before, "rows stored before the hostile input changed"


def test_hostile_bodies(seeded_collector) -> None:
    server, ids, before = seeded_collector
    _extremes(server)
    client = httpx.Client(timeout=60)

    def post(body: bytes, content_type: str, encoding: str | None) -> None:
        headers = {"Content-Type": content_type}
        if encoding == "gzip":
            body = gzip.compress(body)
        elif encoding == "deflate":
            body = zlib.compress(body)
        if encoding:
            headers["Content-Encoding"] = encoding
        check_answer(client.post(server.traces_url, content=body, headers=headers), content_type)

    @FUZZ
    @given(body=protobuf_body(), encoding=st.sampled_from([None, None, "gzip", "deflate"]))
    def protobuf_bodies(body: bytes, encoding: str | None) -> None:
        post(body, PB, encoding)

    @FUZZ
    @given(
        body=json_body(),
        encoding=st.sampled_from([None, None, "gzip"]),
        content_type=st.sampled_from([JS, "application/json; charset=utf-8", "Application/JSON"]),
    )
    def json_bodies(body: bytes, encoding: str | None, content_type: str) -> None:
        post(body, content_type, encoding)

    protobuf_bodies()
    json_bodies()
    client.close()
    _finish(server, ids, before)


def _wide() -> bytes:
    return many_attributes(100_000)


def _deep_pb(depth: int) -> Callable[[], bytes]:
    return lambda: request_with_deep_attribute(depth)


# (name, body factory, content type, content encoding, allowed statuses)
EXTREMES = [
    ("empty protobuf body", lambda: b"", PB, None, {200}),
    ("empty JSON body", lambda: b"", JS, None, {400}),
    ("JSON null", lambda: b"null", JS, None, {400}),
    ("JSON array", lambda: b"[]", JS, None, {400}),
    ("wrong content type", lambda: b"{}", "text/plain", None, {415}),
    ("no content type", lambda: b"{}", "", None, {415}),
    ("form content type", lambda: b"a=1", "application/x-www-form-urlencoded", None, {415}),
    ("unknown encoding", lambda: b"{}", JS, "br", {415}),
    ("gzip header, garbage inside", lambda: b"\x1f\x8b\x08\x00" + os.urandom(64), PB, "gzip", {400}),
    (
        "truncated gzip",
        lambda: gzip.compress(request_of([]).SerializeToString() + b"x" * 1000)[:30],
        PB,
        "gzip",
        {400},
    ),
    ("1 GiB gzip bomb (protobuf)", lambda: gzip_bomb(1024), PB, "gzip", {413}),
    ("1 GiB gzip bomb (JSON)", lambda: gzip_bomb(1024), JS, "gzip", {413}),
    ("gzip bomb sent as deflate", lambda: gzip_bomb(64), PB, "deflate", {400, 413}),
    ("17 MiB plain body", lambda: b"\x00" * (17 << 20), PB, None, {413}),
    ("100,000 attributes on one span", _wide, PB, None, {200}),
    ("attribute nested 60 levels", _deep_pb(60), PB, None, {200, 400}),
    ("attribute nested 1,000 levels", _deep_pb(1_000), PB, None, {400}),
    ("attribute nested 100,000 levels", _deep_pb(100_000), PB, None, {400}),
    ("JSON nested 100,000 levels", lambda: nested_json(100_000), JS, None, {400}),
    (
        "JSON with NaN and 1e400",
        lambda: (
            json.dumps(
                {
                    "resourceSpans": [
                        {
                            "scopeSpans": [
                                {
                                    "spans": [
                                        {
                                            "traceId": "00" * 16,
                                            "spanId": "11" * 8,
                                            "startTimeUnixNano": float("nan"),
                                            "endTimeUnixNano": 1e400,
                                        }
                                    ]
                                }
                            ]
                        }
                    ]
                },
                allow_nan=True,
            )
            .encode()
            .replace(b"Infinity", b"1e400")
        ),
        JS,
        None,
        {200, 400},
    ),
    (
        "JSON ids of wrong length",
        lambda: json.dumps(
            {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "abcd", "spanId": "11" * 20, "name": "x"}]}]}]}
        ).encode(),
        JS,
        None,
        {200, 400},
    ),
    (
        "JSON negative and huge 64-bit numbers",
        lambda: json.dumps(
            {
                "resourceSpans": [
                    {
                        "scopeSpans": [
                            {
                                "spans": [
                                    {
                                        "traceId": "22" * 16,
                                        "spanId": "33" * 8,
                                        "startTimeUnixNano": "-5",
                                        "endTimeUnixNano": str(2**70),
                                        "attributes": [
                                            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": str(2**63)}}
                                        ],
                                    }
                                ]
                            }
                        ]
                    }
                ]
            }
        ).encode(),
        JS,
        None,
        {200, 400},
    ),
]


def _extremes(server) -> None:
    baseline_mb = rss_kib(server.process.pid) / 1024
    failures = []
    with httpx.Client(timeout=120) as client:
        for name, make, content_type, encoding, allowed in EXTREMES:
            headers = {"Content-Type": content_type} if content_type else {}
            if encoding:
                headers["Content-Encoding"] = encoding
            response = client.post(server.traces_url, content=make(), headers=headers)
            try:
                check_answer(response, content_type)
                assert response.status_code in allowed, f"{response.status_code} not in {allowed}"
            except AssertionError as exc:
                failures.append(f"{name}: {exc}: {response.text[:200]}")
    assert not failures, "\n".join(failures)
    # the bomb and the 100k attributes must not have bloated the process
    grown_mb = rss_kib(server.process.pid, "VmHWM") / 1024 - baseline_mb
    assert grown_mb < 200, f"peak RSS grew by {grown_mb:.0f} MB"


def test_same_request_delivered_concurrently_is_stored_once(collector_server) -> None:
    import concurrent.futures

    spans = [tool_span(b"\x42" * 16, i.to_bytes(8, "big"), 1_700_000_000_000_000_000 + i) for i in range(1, 201)]
    body = request_of(spans).SerializeToString()
    with httpx.Client(timeout=60) as client, concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(
            pool.map(
                lambda _: (
                    client.post(collector_server.traces_url, content=body, headers={"Content-Type": PB}).status_code
                ),
                range(16),
            )
        )
    assert answers == [200] * 16
    assert collector_server.stop() == 0
    rows = stored(collector_server.db_path, 'SELECT count(*), count(DISTINCT "SpanId") FROM spans')
    assert rows == [(200, 200)]


def test_a_gzip_body_of_many_tiny_members_is_decoded_in_linear_time(collector_server) -> None:
    """12 MB of empty gzip members after a real one (under the 16 MiB body limit): each member's
    decoder was fed the whole rest of the body and copied it back as unused data, so the decoding
    was quadratic (4 MB took 22 s, 12 MB minutes) and held up every other request's decoding."""
    import time

    span = tool_span(b"\x47" * 16, b"\x48" * 8, 1_700_000_000_000_000_000)
    body = gzip.compress(request_of([span]).SerializeToString()) + gzip.compress(b"", mtime=0) * 600_000
    started = time.monotonic()
    response = httpx.post(
        collector_server.traces_url, content=body, headers={"Content-Type": PB, "Content-Encoding": "gzip"}, timeout=60
    )
    assert response.status_code == 200, response.text[:300]
    assert time.monotonic() - started < 20
    assert collector_server.stop() == 0
    assert stored(collector_server.db_path, 'SELECT "SpanId" FROM spans') == [("48" * 8,)]


def test_hostile_grpc_messages(collector_server) -> None:
    import grpc
    from hostile_bodies import request_with_deep_attribute

    valid = request_of([tool_span(b"\x44" * 16, b"\x45" * 8, 1_700_000_000_000_000_000)]).SerializeToString()
    cases = [
        ("garbage", os.urandom(256), {grpc.StatusCode.INVALID_ARGUMENT}),
        ("truncated", valid[:-5], {grpc.StatusCode.INVALID_ARGUMENT}),
        (
            "nested 100,000 levels",
            request_with_deep_attribute(100_000),
            {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED},
        ),
        (
            "over the message size limit",
            b"\x0a" + b"\xff" * 4 + b"\x7f" + b"\x00" * (20 << 20),
            {grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.INVALID_ARGUMENT},
        ),
    ]
    with grpc.insecure_channel(
        collector_server.grpc_target, options=[("grpc.max_send_message_length", 64 << 20)]
    ) as channel:
        export = channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            request_serializer=lambda raw: raw,
            response_deserializer=lambda raw: raw,
        )
        for name, body, expected in cases:
            with pytest.raises(grpc.RpcError) as failure:
                export(body, timeout=60)
            assert failure.value.code() in expected, (name, failure.value.code(), failure.value.details())
            assert failure.value.details(), name
        export(valid, timeout=60)  # still serving
    assert collector_server.process.poll() is None
    assert "Traceback" not in collector_server.log()


# Argument and usage text that broke a producer's rules (a 500 lost the whole request): each is a
# tool or model span kept with a valid span beside it, over HTTP and over gRPC.
BROKE_A_RULE = {
    "a LangChain payload whose input_str has an unhashable key": {
        "gen_ai.tool.call.arguments": '{"input_str": "{[1]: 2}", "tags": []}'
    },
    "a LangChain payload whose input_str is a dict of a dict key": {
        "gen_ai.tool.call.arguments": '{"input_str": "{{}: 1}", "tags": []}'
    },
    "Langfuse usage nested 4,000 levels": {"langfuse.observation.usage_details": "[" * 4000 + "]" * 4000},
    "Langfuse usage of 1,500 nested objects": {"langfuse.observation.usage_details": '{"a":' * 1500 + "1" + "}" * 1500},
}


def test_text_that_broke_a_rule_keeps_its_request(collector_server) -> None:
    import grpc

    trace = b"\x46" * 16
    spans = [tool_span(trace, b"\x01" * 8, 1_700_000_000_000_000_000, {"gen_ai.tool.call.arguments": '{"q": "ok"}'})]
    for n, attrs in enumerate(BROKE_A_RULE.values(), start=2):
        spans.append(tool_span(trace, n.to_bytes(8, "big"), 1_700_000_000_000_000_000 + n, attrs))
    half = len(spans) // 2
    answer = httpx.post(
        collector_server.traces_url, content=request_of(spans[:half]).SerializeToString(), headers={"Content-Type": PB}
    )
    check_answer(answer, PB)
    assert answer.status_code == 200
    body = ExportTraceServiceResponse()
    body.ParseFromString(answer.content)
    assert body.partial_success.rejected_spans == 0, body.partial_success.error_message
    with grpc.insecure_channel(collector_server.grpc_target) as channel:
        export = channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            request_serializer=lambda raw: raw,
            response_deserializer=ExportTraceServiceResponse.FromString,
        )
        assert export(request_of(spans[half:]).SerializeToString(), timeout=60).partial_success.rejected_spans == 0
    assert collector_server.stop() == 0, collector_server.log()
    assert "Traceback" not in collector_server.log()
    assert stored(collector_server.db_path, 'SELECT count(*) FROM spans WHERE "TraceId" = \'' + trace.hex() + "'") == [
        (len(spans),)
    ]


def test_a_string_that_is_not_utf8_is_repaired_not_the_request_lost(collector_server) -> None:
    import grpc

    trace = b"\x47" * 16
    placeholder = "MAXXER"  # replaced in the serialized bytes by as many bytes that are not UTF-8

    def body(first: int) -> bytes:
        spans = [
            tool_span(trace, (first + i).to_bytes(8, "big"), 1_700_000_000_000_000_000 + first + i, attrs)
            for i, attrs in enumerate([{"gen_ai.tool.call.arguments": '{"q": "ok"}'}, {"note": placeholder}])
        ]
        spans[1].name = f"execute_tool {placeholder}"
        return request_of(spans).SerializeToString().replace(placeholder.encode(), b"MA\xff\xfeER")

    answer = httpx.post(collector_server.traces_url, content=body(1), headers={"Content-Type": PB})
    assert answer.status_code == 200, answer.text
    with grpc.insecure_channel(collector_server.grpc_target) as channel:
        export = channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            request_serializer=lambda raw: raw,
            response_deserializer=ExportTraceServiceResponse.FromString,
        )
        assert export(body(3), timeout=60).partial_success.rejected_spans == 0
    assert collector_server.stop() == 0, collector_server.log()
    names = stored(
        collector_server.db_path, f'SELECT "SpanName" FROM spans WHERE "TraceId" = \'{trace.hex()}\' ORDER BY 1'
    )
    assert names == [("execute_tool MA\ufffd\ufffdER",)] * 2 + [("execute_tool search",)] * 2
