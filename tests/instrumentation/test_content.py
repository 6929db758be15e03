"""Opt-in content capture with truncation and redaction."""

from __future__ import annotations

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
