"""Hostile OTLP request bodies: hypothesis strategies and hand-built extremes (gzip bomb, 100k attributes).

Example:
    >>> len(gzip_bomb(2)) < 10_000
    True
"""

from __future__ import annotations

import json
import struct
import zlib
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from spans import kv, request_of

INT64 = st.integers(-(2**63), 2**63 - 1)
UINT64 = st.integers(0, 2**64 - 1)
UTF8_PLACEHOLDER = "\x01UTF8HOLE\x01"
INVALID_UTF8 = b"\xff\xc3\x28\xa0\xa1\xe2\x28\xa1\xfe"  # same length as the placeholder's UTF-8


@lru_cache(maxsize=4)
def gzip_bomb(mib: int = 1024) -> bytes:
    """A gzip body that inflates to ``mib`` MiB of zeros, built in about a second.

    After a full flush the deflate state is reset, so one compressed MiB repeats verbatim.
    """
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(1 << 20)
    chunk = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    tail = compressor.flush()
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return header + chunk * mib + tail + struct.pack("<II", crc, (mib << 20) & 0xFFFFFFFF)


def many_attributes(n: int = 100_000) -> bytes:
    """One span carrying ``n`` attributes (protobuf)."""
    span = Span(
        trace_id=b"\x0a" * 16,
        span_id=b"\x0b" * 8,
        name="execute_tool wide",
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_000_001_000_000,
        attributes=[kv(f"attr.{i}", i) for i in range(n)],
    )
    return request_of([span]).SerializeToString()


def deeply_nested(depth: int) -> AnyValue:
    """An attribute value nested ``depth`` levels (alternating arrays and kvlists)."""
    value = AnyValue(string_value="bottom")
    for level in range(depth):
        if level % 2:
            value = AnyValue(array_value=ArrayValue(values=[value]))
        else:
            value = AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key="k", value=value)]))
    return value


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def request_with_deep_attribute(depth: int) -> bytes:
    """A serialized request whose one span has an attribute ``depth`` arrays deep.

    Built on the wire (protobuf objects refuse to nest this deep), so the receiver's parser
    is what has to cope.
    """
    value = _field(1, b"bottom")  # AnyValue.string_value
    for _ in range(depth):
        value = _field(5, _field(1, value))  # AnyValue.array_value -> ArrayValue.values
    attribute = _field(1, b"deep") + _field(2, value)  # KeyValue
    span = Span(
        trace_id=b"\x0c" * 16,
        span_id=b"\x0d" * 8,
        name="execute_tool deep",
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_000_001_000_000,
    )
    span_bytes = span.SerializeToString() + _field(9, attribute)  # Span.attributes
    return _field(1, _field(2, _field(2, span_bytes)))  # request.resource_spans -> scope_spans -> spans


def nested_json(depth: int) -> bytes:
    """``{"resourceSpans": [[[[...]]]]}`` ``depth`` levels deep."""
    return b'{"resourceSpans": ' + b"[" * depth + b"]" * depth + b"}"


any_value = st.recursive(
    st.one_of(
        st.builds(lambda s: AnyValue(string_value=s), st.text(max_size=40)),
        st.builds(lambda b: AnyValue(bool_value=b), st.booleans()),
        st.builds(lambda i: AnyValue(int_value=i), INT64),
        st.builds(lambda f: AnyValue(double_value=f), st.floats(allow_nan=True, allow_infinity=True)),
        st.builds(lambda b: AnyValue(bytes_value=b), st.binary(max_size=40)),
        st.just(AnyValue()),
    ),
    lambda children: st.one_of(
        st.builds(lambda vs: AnyValue(array_value=ArrayValue(values=vs)), st.lists(children, max_size=4)),
        st.builds(
            lambda kvs: AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key=k, value=v) for k, v in kvs])),
            st.lists(st.tuples(st.text(max_size=10), children), max_size=4),
        ),
    ),
    max_leaves=20,
)

KEYS = st.one_of(
    st.sampled_from(
        [
            "gen_ai.operation.name",
            "gen_ai.tool.name",
            "gen_ai.agent.name",
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.output_tokens",
            "loopsight.step",
            "loopsight.tool.args_hash",
            "loopsight.termination.reason",
            "loopsight.error.class",
            "error.type",
            "openinference.span.kind",
            "llm.token_count.prompt",
            "traceloop.span.kind",
            "langfuse.observation.type",
            "langfuse.observation.usage_details",
            "gen_ai.tool.call.arguments",
            "input.value",
            "tool.parameters",
            "loopsight.tool.attempts",
            "service.name",
        ]
    ),
    st.text(max_size=30),
)
attribute = st.builds(lambda k, v: KeyValue(key=k, value=v), KEYS, any_value)


@st.composite
def hostile_span(draw: st.DrawFn) -> Span:
    """A span with ids of any length, any numbers, any attribute values, maybe deeply nested."""
    attrs = draw(st.lists(attribute, max_size=12))
    if draw(st.booleans()):
        attrs.append(KeyValue(key="deep", value=deeply_nested(draw(st.integers(0, 25)))))
    return Span(
        trace_id=draw(st.one_of(st.binary(min_size=16, max_size=16), st.binary(max_size=40))),
        span_id=draw(st.one_of(st.binary(min_size=8, max_size=8), st.binary(max_size=20))),
        parent_span_id=draw(st.binary(max_size=12)),
        name=draw(st.one_of(st.text(max_size=60), st.just(UTF8_PLACEHOLDER))),
        kind=draw(st.integers(0, 2**31 - 1)),
        start_time_unix_nano=draw(UINT64),
        end_time_unix_nano=draw(UINT64),
        attributes=attrs,
        events=[
            Span.Event(
                time_unix_nano=draw(UINT64),
                name=draw(st.text(max_size=20)),
                attributes=draw(st.lists(attribute, max_size=3)),
            )
            for _ in range(draw(st.integers(0, 3)))
        ],
        status=Status(code=draw(st.integers(0, 2**31 - 1)), message=draw(st.text(max_size=30))),
        dropped_attributes_count=draw(st.integers(0, 2**32 - 1)),
    )


@st.composite
def protobuf_body(draw: st.DrawFn) -> bytes:
    """A serialized request, then maybe truncated, bit-flipped or given invalid UTF-8."""
    request = request_of(
        draw(st.lists(hostile_span(), max_size=4)),
        service=draw(st.one_of(st.text(max_size=20), st.just(UTF8_PLACEHOLDER))),
    )
    body = request.SerializeToString()
    how = draw(st.sampled_from(["as_is", "truncate", "flip", "utf8", "random"]))
    if how == "truncate" and body:
        body = body[: draw(st.integers(0, len(body) - 1))]
    elif how == "flip" and body:
        at = draw(st.integers(0, len(body) - 1))
        body = body[:at] + bytes([body[at] ^ draw(st.integers(1, 255))]) + body[at + 1 :]
    elif how == "utf8":
        body = body.replace(UTF8_PLACEHOLDER.encode(), INVALID_UTF8)
    elif how == "random":
        body = draw(st.binary(max_size=300))
    return body


json_value = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**80), 2**80),
        st.floats(),
        st.text(max_size=20),
        st.sampled_from(["1e400", "-1", "18446744073709551616", "NaN", "zz", "0x10"]),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=15,
)


def json_template(
    trace_id: str = "5b8efff798038103d269b633813fc60c", span_id: str = "eee19b7ec3c1b174"
) -> dict[str, Any]:
    """A valid OTLP/JSON request (hex ids, string 64-bit integers)."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "fuzz"}}]},
                "scopeSpans": [
                    {
                        "scope": {"name": "fuzz"},
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": span_id,
                                "parentSpanId": "",
                                "name": "execute_tool search",
                                "kind": 1,
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": "1700000000001000000",
                                "attributes": [
                                    {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                                    {"key": "loopsight.step", "value": {"intValue": "3"}},
                                ],
                                "events": [],
                                "status": {"code": 2, "message": "boom"},
                            }
                        ],
                    }
                ],
            }
        ]
    }


_JSON_PATHS = [
    ("resourceSpans",),
    ("resourceSpans", 0),
    ("resourceSpans", 0, "resource"),
    ("resourceSpans", 0, "scopeSpans"),
    ("resourceSpans", 0, "scopeSpans", 0, "spans"),
    *[
        ("resourceSpans", 0, "scopeSpans", 0, "spans", 0, key)
        for key in (
            "traceId",
            "spanId",
            "parentSpanId",
            "name",
            "kind",
            "startTimeUnixNano",
            "endTimeUnixNano",
            "attributes",
            "events",
            "status",
        )
    ],
    ("resourceSpans", 0, "scopeSpans", 0, "spans", 0, "attributes", 1, "value"),
    ("resourceSpans", 0, "scopeSpans", 0, "spans", 0, "attributes", 1, "value", "intValue"),
    ("resourceSpans", 0, "scopeSpans", 0, "spans", 0, "status", "code"),
]


@st.composite
def json_body(draw: st.DrawFn) -> bytes:
    """The template with wrong types/huge numbers put at some paths, maybe truncated or with invalid UTF-8."""
    doc = json_template(
        trace_id=draw(
            st.one_of(st.just("5b8efff798038103d269b633813fc60c"), st.text("0123456789abcdefXYZ", max_size=40))
        ),
        span_id=draw(st.one_of(st.just("eee19b7ec3c1b174"), st.text("0123456789abcdef", max_size=20))),
    )
    for path in draw(st.lists(st.sampled_from(_JSON_PATHS), max_size=3)):
        node: Any = doc
        try:
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = draw(json_value)
        except (KeyError, IndexError, TypeError):
            pass
    body = json.dumps(doc, allow_nan=True).encode()
    how = draw(st.sampled_from(["as_is", "as_is", "truncate", "utf8", "random"]))
    if how == "truncate":
        body = body[: draw(st.integers(0, len(body) - 1))]
    elif how == "utf8":
        body = body.replace(b"execute_tool search", b"execute_tool " + INVALID_UTF8)
    elif how == "random":
        body = draw(st.binary(max_size=200))
    return body
