"""Normalizing a request: every value kind, the limits, and ``iter_rows`` giving the rows
:func:`normalize_span` gives one span at a time, through ``to_arrow``."""

from __future__ import annotations

import json
import math

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from loopsight.ingest.batch import to_arrow
from loopsight.ingest.normalize import MAX_KEY_LENGTH, TRUNCATION_MARKER, Limits, attributes_to_dict, normalize_span
from loopsight.ingest.otlp import iter_rows

VALUES = [
    ("s", AnyValue(string_value="text"), "text"),
    ("empty", AnyValue(string_value=""), ""),
    ("unset", AnyValue(), ""),
    ("i", AnyValue(int_value=-42), "-42"),
    ("zero", AnyValue(int_value=0), "0"),
    ("b", AnyValue(bool_value=False), "false"),
    ("d", AnyValue(double_value=1.5), "1.5"),
    ("nan", AnyValue(double_value=math.nan), "nan"),
    ("bytes", AnyValue(bytes_value=b"\x01\xff"), '"01ff"'),
    ("array", AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=1), AnyValue(string_value="")])), '[1,""]'),
    (
        "kvlist",
        AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key="a", value=AnyValue(bool_value=True))])),
        '{"a":true}',
    ),
]


def test_every_value_kind_is_rendered_as_text():
    kvs = [KeyValue(key=key, value=value) for key, value, _ in VALUES]
    expected = {key: text for key, _, text in VALUES}
    assert attributes_to_dict(kvs, Limits()) == expected


def test_truncation_follows_each_limit_and_duplicates_count_once():
    kvs = [
        KeyValue(key="k", value=AnyValue(string_value="x" * 10)),
        KeyValue(key="k", value=AnyValue(string_value="y" * 10)),
        KeyValue(key="j", value=AnyValue(int_value=123456)),
        KeyValue(key="z", value=AnyValue(string_value="z")),
    ]
    raw = kvs
    assert attributes_to_dict(raw, Limits(max_attribute_length=4)) == {
        "k": "yyyy" + TRUNCATION_MARKER,
        "j": "1234" + TRUNCATION_MARKER,
        "z": "z",
    }
    assert attributes_to_dict(raw, Limits(max_attribute_length=8)) == {
        "k": "y" * 8 + TRUNCATION_MARKER,
        "j": "123456",
        "z": "z",
    }
    assert attributes_to_dict(raw, Limits()) == {"k": "y" * 10, "j": "123456", "z": "z"}
    # four key-values, three keys: the bound counts keys, the last value of a key wins
    assert list(attributes_to_dict(raw, Limits(max_attributes=2)).items()) == [("k", "y" * 10), ("j", "123456")]
    assert attributes_to_dict(raw, Limits(max_attributes=0)) == {}
    assert attributes_to_dict(raw, Limits(max_attributes=3)) == attributes_to_dict(raw, Limits())


def test_long_values_are_read_whole():
    text = "é" * 5000
    raw = [KeyValue(key="long", value=AnyValue(string_value=text))]
    assert attributes_to_dict(raw, Limits()) == {"long": text}
    assert attributes_to_dict(raw, Limits(max_attribute_length=3)) == {"long": "ééé" + TRUNCATION_MARKER}


def test_an_empty_event_or_link_is_still_one():
    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, events=[Span.Event()], links=[Span.Link()])
    request = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[span])])])
    (row,) = iter_rows(request, Limits())
    assert row.Events == [(0, "", {})] and row.Links == [("", "", "", {})]
    assert row == normalize_span(span, {}, "", "", Limits())


def test_iter_rows_gives_normalize_span_rows():
    kv = lambda key, **value: KeyValue(key=key, value=AnyValue(**value))  # noqa: E731
    spans = [
        Span(
            trace_id=b"\x01" * 16,
            span_id=b"\x02" * 8,
            name="execute_tool search",
            status=Status(code=2, message="HTTP 503"),
            attributes=[
                kv("gen_ai.operation.name", string_value="execute_tool"),
                kv("gen_ai.tool.call.arguments", string_value='{"q": 1}'),
                kv("loopsight.step", int_value=3),
            ],
            events=[
                Span.Event(
                    name="exception",
                    attributes=[kv("exception.type", string_value="TimeoutError"), kv("content", string_value="c")],
                )
            ],
        ),
        Span(
            trace_id=b"\x01" * 16,
            span_id=b"\x03" * 8,
            name="chat m",
            status=Status(code=7),
            attributes=[
                kv("gen_ai.usage.input_tokens", int_value=10),
                kv("llm.input_messages.0.message.content", string_value="hi"),
            ],
            links=[Span.Link(trace_id=b"\x09" * 16, span_id=b"\x08" * 8, attributes=[kv("l", bool_value=True)])],
        ),
        Span(
            trace_id=b"\x01" * 16, span_id=b"\x04" * 8, name="invoke_agent a", status=Status(message="only a message")
        ),
    ]
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=Resource(attributes=[kv("service.name", string_value="svc")]),
                scope_spans=[ScopeSpans(scope=InstrumentationScope(name="sc", version="2"), spans=spans)],
            )
        ]
    )
    for limits in (Limits(), Limits(capture_content=True, max_attribute_length=5, max_events=0)):
        rows = list(iter_rows(request, limits))
        assert rows == [normalize_span(span, {"service.name": "svc"}, "sc", "2", limits) for span in spans]
        assert to_arrow(rows).num_rows == 3
    first, second, third = list(iter_rows(request, Limits()))
    assert (first.StatusCode, first.StatusMessage, first.error_type, first.error_class) == (
        "Error",
        "HTTP 503",
        "TimeoutError",
        "transient",
    )
    assert first.Events[0][2] == {"exception.type": "TimeoutError"} and first.step == 3 and first.args_hash
    assert (second.StatusCode, second.input_tokens, second.SpanAttributes) == (
        "Unset",
        10,
        {"gen_ai.usage.input_tokens": "10"},
    )
    assert second.Links == [("09" * 16, "08" * 8, "", {"l": "true"})]
    # no termination reason on the span: the run's is decided over its agent spans when it is derived
    assert (third.StatusCode, third.StatusMessage, third.termination_reason) == ("Unset", "only a message", None)


def _tool_span(i: int, attributes: list[KeyValue]) -> Span:
    return Span(
        trace_id=b"\x01" * 16,
        span_id=bytes([i + 1]) * 8,
        name="execute_tool write_file",
        attributes=[KeyValue(key="gen_ai.operation.name", value=AnyValue(string_value="execute_tool")), *attributes],
    )


def test_arguments_longer_than_the_limit_are_hashed_whole():
    """Arguments that differ only past the cut are different calls, not a loop."""
    from loopsight.hashing import args_hash

    rows = []
    for i in range(2):
        args = {"blob": "a" * 9000 + str(i)}
        value = AnyValue(string_value=json.dumps(args))
        row = normalize_span(
            _tool_span(i, [KeyValue(key="gen_ai.tool.call.arguments", value=value)]),
            {},
            "",
            "",
            Limits(capture_content=True),
        )
        assert row.args_hash == args_hash(args)
        assert row.SpanAttributes["gen_ai.tool.call.arguments"].endswith(TRUNCATION_MARKER)  # stored cut all the same
        rows.append(row)
    assert rows[0].args_hash != rows[1].args_hash  # (their similarity sketches are near: nearly the same text)


def test_names_keys_messages_and_trace_states_are_bounded_too():
    long = "n" * 100
    cut = "n" * 16 + TRUNCATION_MARKER
    span = Span(
        trace_id=b"\x01" * 16,
        span_id=b"\x02" * 8,
        name=long,
        trace_state=long,
        status=Status(code=Status.STATUS_CODE_ERROR, message=long),
        attributes=[KeyValue(key="k" * 2000, value=AnyValue(string_value="v"))],
        events=[Span.Event(name=long)],
        links=[Span.Link(trace_id=b"\x03" * 16, span_id=b"\x04" * 8, trace_state=long)] * 5,
    )
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(scope_spans=[ScopeSpans(scope=InstrumentationScope(name=long, version=long), spans=[span])])
        ]
    )
    [row] = list(iter_rows(request, Limits(max_attribute_length=16, max_events=3)))
    assert row.SpanName == row.TraceState == row.StatusMessage == row.ScopeName == row.ScopeVersion == cut
    assert list(row.SpanAttributes) == ["k" * MAX_KEY_LENGTH + TRUNCATION_MARKER]  # keys: a fixed bound
    assert [name for _, name, _ in row.Events] == [cut]
    assert [trace_state for _, _, trace_state, _ in row.Links] == [cut] * 3  # links bounded as events are


def test_a_span_a_rule_fails_on_is_rejected_alone_and_leaves_no_call_in_the_batch():
    from loopsight.ingest.normalize import NOT_JSON, CallBatch, agent_row, read_or_reason

    batch = CallBatch()
    batch.add('{"q": "kept"}', {"q": "kept"}, True)

    def failing(*args: object) -> None:
        batch.add('{"q": "half read"}', NOT_JSON, True)
        raise KeyError("a defect in some producer's rule")

    assert read_or_reason(batch, failing, "ignored") == "span could not be read: KeyError"
    assert [arguments for _, arguments, _, _ in batch.calls] == ['{"q": "kept"}']
    args = ("01" * 16, "02" * 8, "", 0, 5, "", "execute_tool search", "Internal", "Unset", "")
    row = read_or_reason(
        batch, agent_row, *args, {"gen_ai.tool.call.arguments": '{"q": "x"}'}, {}, "", "", [], [], Limits()
    )
    assert not isinstance(row, str) and row.tool == "search"


def test_a_long_status_message_never_keeps_part_of_a_secret_cut_at_its_head():
    """A long secret redacted early shrinks the redacted head: what lay at the head's end (an
    address cut in two, not recognisable as one) must still not be kept."""
    limits = Limits()
    cap = limits.max_attribute_length
    jwt = "request failed, token=eyJhbGciOiJIUzI1NiJ9." + "a" * 3000 + ".sig "
    message = jwt + "x" * (cap + 512 - 10 - len(jwt)) + "john.smith@corp.example.com and more" * 20
    span = Span(
        trace_id=b"\x01" * 16, span_id=b"\x05" * 8, name="execute_tool t", status=Status(code=2, message=message)
    )
    row = normalize_span(span, {}, "", "", limits)
    assert "john" not in row.StatusMessage and "eyJ" not in row.StatusMessage
    assert row.StatusMessage.endswith(TRUNCATION_MARKER) and "[REDACTED:" in row.StatusMessage
