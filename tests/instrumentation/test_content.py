"""Opt-in content capture with truncation and redaction."""

from __future__ import annotations

import dataclasses
import time

import pytest

import loopsight
from loopsight import attributes as A
from loopsight import redaction
from loopsight.instrumentation import content


@pytest.fixture
def capture():
    saved = (content.SETTINGS.enabled, content.SETTINGS.max_length, list(redaction.USER_PATTERNS))
    content.set_capture(True)
    yield content.SETTINGS
    content.SETTINGS.enabled, content.SETTINGS.max_length, redaction.USER_PATTERNS[:] = saved


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key sk-proj-abcdefghijklmnopqrstuv end", "key [REDACTED:api_key] end"),
        ("sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA", "[REDACTED:api_key]"),
        ("aws AKIAIOSFODNN7EXAMPLE", "aws [REDACTED:api_key]"),
        ("gh ghp_abcdefghijklmnopqrstuvwxyz0123456789", "gh [REDACTED:api_key]"),
        ("Authorization: Bearer eyJhbGciOi.abc-def_ghi", "Authorization: [REDACTED:bearer]"),
        ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_nature", "token [REDACTED:jwt]"),
        ("mail alice.smith+x@example.co.uk now", "mail [REDACTED:email] now"),
        ("card 4111-1111-1111-1111 ok", "card [REDACTED:card] ok"),
        ("card 5500 0000 0000 0004", "card [REDACTED:card]"),
        ("order 1234567890123 is not a card", "order 1234567890123 is not a card"),
        ("nothing secret here", "nothing secret here"),
        # credentials in URLs, headers and secret-named fields (review 2026-12-04)
        (
            "to postgres://admin:Hunter2pw@localhost:5432/orders",
            "to postgres://admin:[REDACTED:password]@localhost:5432/orders",
        ),
        ("redis://:p4ss!w0rd@cache.internal:6379/0", "redis://:[REDACTED:password]@cache.internal:6379/0"),
        ("mysql://root:s3cr3t@10.0.0.5/db", "mysql://root:[REDACTED:password]@10.0.0.5/db"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: [REDACTED:basic]"),
        ("Authorization: Token abc123\nHost: x", "Authorization: [REDACTED:authorization]\nHost: x"),
        ("Cookie: session=abc; theme=dark", "Cookie: [REDACTED:cookie]"),
        ("x-api-key: 8f14e45fceea167a5a36dedd4bea2543", "x-api-key: [REDACTED:secret]"),
        ("DB_PASSWORD=hunter2 other=1", "DB_PASSWORD=[REDACTED:secret] other=1"),
        ("Client(api_key=abc123def, timeout=3)", "Client(api_key=[REDACTED:secret], timeout=3)"),
        ("{'passwd': 'hunter2', 'user': 'bob'}", "{'passwd': '[REDACTED:secret]', 'user': 'bob'}"),
        (
            '{"apikey":"k1","client_secret":"c2","access_token":"t3"}',
            '{"apikey":"[REDACTED:secret]","client_secret":"[REDACTED:secret]","access_token":"[REDACTED:secret]"}',
        ),
        (
            '{"accessToken": "a b c", "secret": "x\\"y"}',
            '{"accessToken": "[REDACTED:secret]", "secret": "[REDACTED:secret]"}',
        ),
        ("GET /v1?api_key=XYZ123&q=weather", "GET /v1?api_key=[REDACTED:secret]&q=weather"),
        ("token: sk-abcdefghijklmnopqrstuvwx", "token: [REDACTED:api_key]"),
        # harmless look-alikes stay
        ('{"usage":{"prompt_tokens":12,"max_tokens":100}}', '{"usage":{"prompt_tokens":12,"max_tokens":100}}'),
        # pagination tokens are positions, not secrets; a CSRF or refresh token is one
        (
            '{"q": "shoes", "page_token": "CAUQAA", "nextPageToken": "x1"}',
            '{"q": "shoes", "page_token": "CAUQAA", "nextPageToken": "x1"}',
        ),
        (
            '{"refresh_token": "r1", "csrf_token": "c2"}',
            '{"refresh_token": "[REDACTED:secret]", "csrf_token": "[REDACTED:secret]"}',
        ),
        ("a basic understanding of https://example.com/a:b", "a basic understanding of https://example.com/a:b"),
        ("sk-learn and task-abcdefghijklmnopqrstuvwx", "sk-learn and task-abcdefghijklmnopqrstuvwx"),
    ],
)
def test_default_redaction(text, expected):
    assert content.redact(text) == expected


def test_off_by_default(loopsight_spans, monkeypatch):
    monkeypatch.delenv("LOOPSIGHT_CAPTURE_CONTENT", raising=False)
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    content.SETTINGS.reload()
    assert not content.capture_enabled()

    @loopsight.tool
    def search(q):
        return "secret result"

    @loopsight.llm(model="m")
    def model(messages):
        return {"choices": [{"message": {"content": "hi"}}]}

    search("secret query")
    model([{"role": "user", "content": "secret"}])
    for span in loopsight_spans.spans:
        assert not {A.TOOL_CALL_ARGUMENTS, A.TOOL_CALL_RESULT, A.INPUT_MESSAGES, A.OUTPUT_MESSAGES} & set(
            span.attributes
        )


@pytest.mark.parametrize("var", ["LOOPSIGHT_CAPTURE_CONTENT", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"])
def test_env_switches(monkeypatch, var):
    saved = content.SETTINGS.enabled
    monkeypatch.setenv(var, "true")
    content.SETTINGS.reload()
    try:
        assert content.capture_enabled()
    finally:
        monkeypatch.delenv(var)
        content.SETTINGS.reload()
        content.SETTINGS.enabled = saved


def test_captured_redacted_and_truncated(loopsight_spans, capture):
    content.set_capture(max_length=40, redact_patterns=[r"ORDER-\d+"])

    @loopsight.tool
    def send(to, body):
        return {"sent": True, "ref": "ORDER-77"}

    @loopsight.llm(model="m")
    def model(messages, temperature=0):
        return {"choices": [{"message": {"content": "x" * 100}}]}

    send("bob@example.com", "hello")
    model([{"role": "user", "content": "sk-abcdefghijklmnopqrstuvwx"}])
    with loopsight.tool("t", args={"k": 1}) as t:
        t.set_result("done")
    tool_span, chat, ctx_tool = loopsight_spans.spans
    assert tool_span.attributes[A.TOOL_CALL_ARGUMENTS] == '{"body":"hello","to":"[REDACTED:email]"}'
    assert tool_span.attributes[A.TOOL_CALL_RESULT] == '{"ref":"[REDACTED]","sent":true}'
    assert "[REDACTED:api_key]" in chat.attributes[A.INPUT_MESSAGES]
    out = chat.attributes[A.OUTPUT_MESSAGES]
    assert out.startswith('{"choices":[{"message":{"content":"xxx') and "…[truncated" in out
    assert ctx_tool.attributes[A.TOOL_CALL_RESULT] == "done"
    assert ctx_tool.attributes[A.TOOL_CALL_ARGUMENTS] == '{"k":1}'


def test_configure_capture_flag(capture):
    from opentelemetry.sdk.trace import TracerProvider

    from loopsight.instrumentation.state import STATE

    saved = STATE.provider
    try:
        loopsight.configure(tracer_provider=TracerProvider(), capture_content=False)
        assert not content.capture_enabled()
    finally:
        STATE.provider = saved


def test_the_context_manager_form_records_messages_given_to_it(loopsight_spans, capture):
    history = [{"role": "user", "content": "where is order 7? my key is sk-abcdefghijklmnopqrstuvwx"}]
    with loopsight.llm(model="m", messages=history) as call:
        call.record({"role": "assistant", "content": "It shipped."})
    content.set_capture(False)
    with loopsight.llm(model="m", messages=history) as call:
        call.record({"role": "assistant", "content": "It shipped."})
    captured, off = loopsight_spans.spans
    assert "where is order 7?" in captured.attributes[A.INPUT_MESSAGES]
    assert "[REDACTED:api_key]" in captured.attributes[A.INPUT_MESSAGES]
    assert captured.attributes[A.OUTPUT_MESSAGES] == '{"content":"It shipped.","role":"assistant"}'
    assert not {A.INPUT_MESSAGES, A.OUTPUT_MESSAGES} & set(off.attributes)


def test_exception_messages_and_stacktraces_are_redacted(loopsight_spans):
    with pytest.raises(RuntimeError), loopsight.tool("t"):
        raise RuntimeError("auth failed for key sk-abcdefghijklmnopqrstuvwx")
    (span,) = loopsight_spans.spans
    assert span.events[0].attributes["exception.message"] == "auth failed for key [REDACTED:api_key]"
    stacktrace = span.events[0].attributes["exception.stacktrace"]
    # the SDK's stacktrace held the key twice: in the source line and in the last line
    assert "sk-abcdefghijklmnopqrstuvwx" not in stacktrace
    assert stacktrace.startswith("Traceback (most recent call last):")
    assert stacktrace.rstrip().endswith("RuntimeError: auth failed for key [REDACTED:api_key]")


def test_a_long_exception_message_keeps_no_part_of_a_secret_cut_at_its_head(loopsight_spans):
    """A long token redacted early shrinks the head redacted: the address cut at the head's end
    (not recognisable as one) is still dropped, and the message says it was cut."""
    jwt = "request failed, token=eyJhbGciOiJIUzI1NiJ9." + "a" * 3000 + ".sig "
    message = jwt + "x" * (8192 + 512 - 10 - len(jwt)) + "john.smith@corp.example.com and more" * 40
    with pytest.raises(RuntimeError), loopsight.tool("t"):
        raise RuntimeError(message)
    (span,) = loopsight_spans.spans
    kept = span.events[0].attributes["exception.message"]
    assert "john" not in kept and "eyJ" not in kept and kept.endswith("…[truncated]"), kept[-40:]


# "sk-sk-sk-…" made the former api_key pattern rescan the rest of the text from every "sk-":
# 15,000 characters cost 1.4 s, 60,000 cost 20 s in the agent's thread. Each bound below is
# more than 50x what the fixed code takes (it is linear: under 10 ms here).
HOSTILE = "sk-" * 40_000 + "eyJa-" * 8_000  # 160,000 characters: minutes before the fix


def test_hostile_exception_message_is_redacted_in_linear_time(loopsight_spans):
    """Default settings (capture off): exception messages and stacktraces are always redacted."""

    @loopsight.tool
    def fetch_page(url):
        raise ValueError(f"could not parse page: {HOSTILE} key sk-abcdefghijklmnopqrstuvwx")

    started = time.perf_counter()
    with pytest.raises(ValueError):
        fetch_page("https://example.com")
    assert time.perf_counter() - started < 2.0
    (event,) = loopsight_spans.spans[0].events
    message, stacktrace = event.attributes["exception.message"], event.attributes["exception.stacktrace"]
    # cut to what the collector keeps before it is redacted: a 10 MB message cost ~2 s before
    # (the stacktrace's head held the key in its source line: redacted, it kept a few characters less)
    assert len(message) == 8192 and 8192 - 64 < len(stacktrace) <= 8192 and message.endswith("…[truncated]")
    assert message.startswith("could not parse page: ") and stacktrace.startswith("Traceback")
    assert "sk-abcdefghijklmnopqrstuvwx" not in message + stacktrace


def test_a_short_exception_message_is_kept_whole_and_redacted(loopsight_spans):
    @loopsight.tool
    def fetch_page(url):
        raise ValueError(f"could not parse page {'x' * 8000} key sk-abcdefghijklmnopqrstuvwx")

    with pytest.raises(ValueError):
        fetch_page("https://example.com")
    (event,) = loopsight_spans.spans[0].events
    assert event.attributes["exception.message"].endswith("x key [REDACTED:api_key]")


def test_capture_cuts_before_redacting(loopsight_spans, capture):
    """Only the kept head (and a margin) is redacted: a hostile argument costs what its head
    costs, and a secret straddling the cut is still redacted, not kept in part."""
    content.set_capture(max_length=100)

    @loopsight.tool
    def read(text):
        return "x " * 48 + "sk-abcdefghijklmnopqrstuvwx and more"  # the key straddles character 100

    started = time.perf_counter()
    read(HOSTILE + " sk-" + "a" * 1000)
    assert time.perf_counter() - started < 2.0
    (span,) = loopsight_spans.spans
    args = span.attributes[A.TOOL_CALL_ARGUMENTS]
    assert args.startswith('{"text":"sk-sk-sk-')
    # The count is of the characters past the cut as they were: the key past the head was never handed
    # to the patterns (redacting everything first made the count 985 less, and took minutes).
    cut = len('{"text":""}') + len(HOSTILE) + len(" sk-") + 1000 - 100
    assert args.endswith(f"…[truncated {cut} chars]")
    result = span.attributes[A.TOOL_CALL_RESULT]
    assert result == "x " * 48 + "[RED…[truncated 23 chars]"


@pytest.mark.parametrize(
    ("dsn", "expected"),
    [
        (
            "postgres://admin:Hunter2pw@localhost:5432/orders",
            "postgres://admin:[REDACTED:password]@localhost:5432/orders",
        ),
        ("redis://:p4ss!w0rd@cache.internal:6379/0", "redis://:[REDACTED:password]@cache.internal:6379/0"),
        ("mysql://root:s3cr3t@10.0.0.5/db", "mysql://root:[REDACTED:password]@10.0.0.5/db"),
    ],
)
def test_url_passwords_in_exception_messages_are_redacted(loopsight_spans, dsn, expected):
    """Default settings: the message keeps scheme, user and host, not the password."""

    @loopsight.tool
    def connect(dsn):
        raise ConnectionError(f"could not connect to {dsn}")

    with pytest.raises(ConnectionError):
        connect(dsn)
    (event,) = loopsight_spans.spans[0].events
    assert event.attributes["exception.message"] == f"could not connect to {expected}"
    assert dsn not in event.attributes["exception.stacktrace"]


def test_captured_headers_and_secret_fields_are_redacted(loopsight_spans, capture):
    @loopsight.tool
    def call_api(url, headers, password):
        return {"status": "ok", "session": {"access_token": "tok-123", "expires_in": 3600}}

    call_api(
        "https://bob:S3cretPass@api.example.com/v1",
        {"Authorization": "Basic dXNlcjpwYXNzd29yZA==", "x-api-key": "8f14e45fceea167a5a36dedd4bea2543"},
        password="Tr0ub4dor&3",
    )
    (span,) = loopsight_spans.spans
    assert span.attributes[A.TOOL_CALL_ARGUMENTS] == (
        '{"headers":{"Authorization":"[REDACTED:basic]","x-api-key":"[REDACTED:secret]"},'
        '"password":"[REDACTED:secret]","url":"https://bob:[REDACTED:password]@api.example.com/v1"}'
    )
    assert span.attributes[A.TOOL_CALL_RESULT] == (
        '{"session":{"access_token":"[REDACTED:secret]","expires_in":3600},"status":"ok"}'
    )


@dataclasses.dataclass
class Upload:
    name: str
    data: bytes


def test_bytes_are_captured_as_text_and_redacted(loopsight_spans, capture):
    """Bytes were written as hex, which decodes straight back to the key: they are now decoded
    (UTF-8, undecodable bytes as U+FFFD) and redacted like text, at any depth."""

    @loopsight.tool
    def post(url: str, body: bytes, extra):
        return b"echo: " + body

    body = b"Authorization: Bearer sk-proj-abcdefghijklmnopqrstuvwx"
    post("https://api.example.com", body, [Upload("k", b"\xff key sk-abcdefghijklmnopqrstuvwx"), {b"raw"}])
    (span,) = loopsight_spans.spans
    args = span.attributes[A.TOOL_CALL_ARGUMENTS]
    assert args == (
        '{"body":"Authorization: [REDACTED:bearer]","extra":[{"data":"\ufffd key [REDACTED:api_key]","name":"k"},'
        '["raw"]],"url":"https://api.example.com"}'
    )
    assert span.attributes[A.TOOL_CALL_RESULT] == "echo: Authorization: [REDACTED:bearer]"
    assert body.hex() not in args and "abcdefghijklmnopqrstuvwx" not in args


def _encoded(spans):
    """The spans as the OTLP exporter sends them (its protobuf encoder), by span name; an attribute
    the encoder could not write is missing from them."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    request = MessageToDict(encode_spans(spans))
    out = {}
    for scope in request["resourceSpans"][0]["scopeSpans"]:
        for span in scope["spans"]:
            out[span["name"]] = span
    return out


def _values(attributes):
    return {kv["key"]: next(iter(kv["value"].values())) for kv in attributes}


def test_a_lone_surrogate_in_an_exception_message_reaches_the_exporter(loopsight_spans):
    """A message holding undecodable bytes read with surrogateescape lost exception.message and
    exception.stacktrace at export (protobuf cannot encode a lone surrogate)."""
    with pytest.raises(ValueError), loopsight.tool("t"):
        raise ValueError("bad \udc80 byte")
    (event,) = _encoded(loopsight_spans.spans)["execute_tool t"]["events"]
    attributes = _values(event["attributes"])
    assert attributes["exception.message"] == "bad \ufffd byte"
    assert attributes["exception.stacktrace"].rstrip().endswith("ValueError: bad \ufffd byte")


def test_user_strings_with_surrogates_reach_the_exporter(loopsight_spans, capture):
    """Names, error types, attributes, finish reasons and captured content: a lone surrogate is
    U+FFFD, a surrogate pair its character (a span name holding one lost the whole batch)."""
    with loopsight.agent("agent\udc80", conversation_id="c\udcff") as run:
        with loopsight.llm("m\ud800") as call:
            call.set_usage(1, 1, ["stop\udc80"])
        with loopsight.tool("read\udc80", args={"path": "/tmp/\udcff.txt"}) as t:
            t.retry("429\ud800")
            t.set_attribute("k", "v\udc80")
            t.set_attribute("many", ["a\udc80", "\ud83d\ude00"])
            t.fail(loopsight.PermanentToolError("gone", error_type="gone\udc80"))
        run.terminate("completed")
    spans = _encoded(loopsight_spans.spans)
    assert set(spans) == {"invoke_agent agent\ufffd", "chat m\ufffd", "execute_tool read\ufffd"}
    run_attrs = _values(spans["invoke_agent agent\ufffd"]["attributes"])
    assert run_attrs[A.AGENT_NAME] == "agent\ufffd" and run_attrs[A.CONVERSATION_ID] == "c\ufffd"
    chat = _values(spans["chat m\ufffd"]["attributes"])
    assert chat[A.REQUEST_MODEL] == "m\ufffd"
    assert chat[A.RESPONSE_FINISH_REASONS] == {"values": [{"stringValue": "stop\ufffd"}]}
    tool_span = spans["execute_tool read\ufffd"]
    tool_attrs = _values(tool_span["attributes"])
    assert tool_attrs[A.TOOL_CALL_ARGUMENTS] == '{"path":"/tmp/\ufffd.txt"}'
    assert tool_attrs["k"] == "v\ufffd"
    assert tool_attrs["many"] == {"values": [{"stringValue": "a\ufffd"}, {"stringValue": "😀"}]}
    assert tool_attrs[A.ERROR_TYPE] == "gone\ufffd" and tool_span["status"]["message"] == "gone\ufffd"
    (retry,) = tool_span["events"]
    assert _values(retry["attributes"])[A.ERROR_TYPE] == "429\ufffd"
