"""Wrong arguments to the public API are refused where they are given, naming the parameter:
never a silently wrong span, nor a failure on every later call (review 2027-01)."""

from __future__ import annotations

import logging
import re

import pytest

import loopsight
from loopsight import attributes as A
from loopsight import redaction
from loopsight.instrumentation import content
from loopsight.instrumentation.state import STATE


@pytest.fixture
def settings():
    """Content settings and the provider in use, as they were before the test."""
    saved = (content.SETTINGS.enabled, content.SETTINGS.max_length, list(redaction.USER_PATTERNS), STATE.provider)
    yield content.SETTINGS
    content.SETTINGS.enabled, content.SETTINGS.max_length, redaction.USER_PATTERNS[:], STATE.provider = saved


def _captured_arguments(loopsight_spans, text):
    """What a tool span records of ``text`` as its argument (None: nothing recorded)."""
    loopsight_spans.clear()
    with loopsight.tool("t", args={"q": text}):
        pass
    (span,) = loopsight_spans.spans
    return span.attributes.get(A.TOOL_CALL_ARGUMENTS)


# -- configure -------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["no", "false", 0, 1, "yes"])
def test_capture_content_takes_a_bool_only(loopsight_spans, settings, value):
    settings.enabled = False
    with pytest.raises(TypeError, match="capture_content must be True or False"):
        loopsight.configure(tracer_provider=STATE.provider, capture_content=value)
    assert _captured_arguments(loopsight_spans, "secret plan") is None  # still off


def test_capture_content_bool_still_switches(loopsight_spans, settings):
    loopsight.configure(tracer_provider=STATE.provider, capture_content=True)
    assert _captured_arguments(loopsight_spans, "plan") == '{"q":"plan"}'
    loopsight.configure(tracer_provider=STATE.provider, capture_content=False)
    assert _captured_arguments(loopsight_spans, "plan") is None


@pytest.mark.parametrize("patterns", ["abc", re.compile("abc"), b"abc"])
def test_a_lone_redact_pattern_is_refused(loopsight_spans, settings, patterns):
    settings.enabled = True
    with pytest.raises(TypeError, match=r"redact_patterns must be a list of patterns.*pass \["):
        loopsight.configure(tracer_provider=STATE.provider, redact_patterns=patterns)
    # nothing persisted: not "a", "b" and "c" redacted one letter at a time
    assert _captured_arguments(loopsight_spans, "abc cab") == '{"q":"abc cab"}'


def test_an_invalid_redact_pattern_names_it(loopsight_spans, settings):
    settings.enabled = True
    with pytest.raises(ValueError, match=r"redact_patterns\[1\] is not a valid regular expression \('\('\)"):
        loopsight.configure(tracer_provider=STATE.provider, redact_patterns=[r"ORDER-\d+", "("])
    with pytest.raises(TypeError, match=r"redact_patterns\[0\] must be a str or a compiled re.Pattern"):
        loopsight.configure(tracer_provider=STATE.provider, redact_patterns=[5])
    assert _captured_arguments(loopsight_spans, "ORDER-12") == '{"q":"ORDER-12"}'  # none was added
    loopsight.configure(tracer_provider=STATE.provider, redact_patterns=(r"ORDER-\d+", re.compile("zz+")))
    assert _captured_arguments(loopsight_spans, "ORDER-12 zzz") == '{"q":"[REDACTED] [REDACTED]"}'


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"tracer_provider": 5}, TypeError, "tracer_provider must be a TracerProvider"),
        ({"exporter": 5}, TypeError, "exporter must be a SpanExporter"),
        ({"endpoint": 123}, TypeError, "endpoint must be a str"),
        ({"endpoint": ""}, ValueError, "endpoint must be a non-empty str"),
        ({"endpoint": "127.0.0.1:4318"}, ValueError, "endpoint must be a URL starting with http:// or https://"),
        ({"endpoint": "ftp://127.0.0.1:4318"}, ValueError, "endpoint must be a URL starting with http://"),
        ({"endpoint": "ftp://h:4317", "protocol": "grpc"}, ValueError, "endpoint must be a URL"),
        ({"headers": "x"}, TypeError, "headers must be a mapping of str to str"),
        ({"headers": {"authorization": 5}}, TypeError, "headers must map str to str"),
        ({"service_name": 5}, TypeError, "service_name must be a str"),
        ({"content_max_length": -1}, ValueError, "content_max_length must be >= 0"),
        ({"content_max_length": 10.5}, TypeError, "content_max_length must be an integer"),
        ({"content_max_length": "10"}, TypeError, "content_max_length must be an integer"),
        ({"batch": "no"}, TypeError, "batch must be True or False"),
    ],
)
def test_configure_refuses_what_would_lose_spans(loopsight_spans, settings, kwargs, error, message):
    provider = STATE.provider
    with pytest.raises(error, match=message):
        loopsight.configure(**kwargs)
    assert STATE.provider is provider  # nothing changed: spans still go where they went
    loopsight_spans.clear()
    with loopsight.tool("t"):
        pass
    assert [s.name for s in loopsight_spans.spans] == ["execute_tool t"]


def test_configure_keeps_taking_valid_endpoints(settings):
    from loopsight.instrumentation.setup import check_endpoint

    check_endpoint("https://collector.example:4318/", "http/protobuf")
    check_endpoint("http://127.0.0.1:4317", "grpc")
    check_endpoint("127.0.0.1:4317", "grpc")  # gRPC's host:port (insecure)
    check_endpoint(None, "http/protobuf")


# -- decorators ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("factory", "kwargs", "error", "message"),
    [
        (loopsight.agent, {"max_steps": -1}, ValueError, "max_steps must be >= 1"),
        (loopsight.agent, {"max_steps": 0}, ValueError, "max_steps must be >= 1"),
        (loopsight.agent, {"max_seconds": -2}, ValueError, "max_seconds must be a finite number > 0"),
        (loopsight.agent, {"max_seconds": float("nan")}, ValueError, "max_seconds must be a finite number > 0"),
        (loopsight.agent, {"max_seconds": "soon"}, TypeError, "max_seconds must be a number"),
        (loopsight.agent, {"max_tokens": 1.5}, TypeError, "max_tokens must be an integer"),
        (loopsight.agent, {"max_tool_calls": True}, TypeError, "max_tool_calls must be an integer"),
        (loopsight.agent, {"name": 5}, TypeError, "name must be a str"),
        (loopsight.agent, {"conversation_id": 7}, TypeError, "conversation_id must be a str"),
        (loopsight.tool, {"idempotent": "no"}, TypeError, "idempotent must be True or False"),
        (loopsight.tool, {"name": 5}, TypeError, "name must be a str"),
        (loopsight.tool, {"attempts": -3}, ValueError, "attempts must be >= 1"),
        (loopsight.tool, {"step": -2}, ValueError, "step must be >= 0"),
        (loopsight.tool, {"check": "x"}, TypeError, "check must be callable"),
        (loopsight.tool, {"call_id": 1}, TypeError, "call_id must be a str"),
        (loopsight.llm, {"step": "x"}, TypeError, "step must be an integer"),
        (loopsight.llm, {"extract": 5}, TypeError, "extract must be callable"),
        (loopsight.llm, {"model": 4}, TypeError, "model must be a str"),
        (loopsight.llm, {"provider": ["openai"]}, TypeError, "provider must be a str"),
    ],
)
def test_decorator_arguments_are_checked_when_made(loopsight_spans, factory, kwargs, error, message):
    with pytest.raises(error, match=message):
        factory(**kwargs)
    assert not loopsight_spans.spans


def test_tool_name_given_positionally_must_be_a_str(loopsight_spans):
    with pytest.raises(TypeError, match="name must be a str, got 5"):
        loopsight.tool(5)


def test_valid_decorator_arguments_are_recorded_as_given(loopsight_spans):
    @loopsight.agent("a", max_steps=3, max_tool_calls=4, max_tokens=500, max_seconds=2)
    def run():
        model()
        search()

    @loopsight.llm("m", step=5, extract=lambda r: {"input_tokens": 3})
    def model():
        return {}

    @loopsight.tool("search", idempotent=False, attempts=2, step=0, check=lambda r: None)
    def search():
        return {"hits": 1}

    run()
    (agent,) = loopsight_spans.by_name("invoke_agent")
    (chat,) = loopsight_spans.by_name("chat")
    (tool_span,) = loopsight_spans.by_name("execute_tool")
    assert agent.attributes[A.BUDGET_MAX_STEPS] == 3 and agent.attributes[A.BUDGET_MAX_SECONDS] == 2.0
    assert isinstance(agent.attributes[A.BUDGET_MAX_SECONDS], float)
    assert chat.attributes[A.STEP] == 5 and chat.attributes[A.USAGE_INPUT_TOKENS] == 3
    assert tool_span.attributes[A.TOOL_IDEMPOTENT] is False and tool_span.attributes[A.TOOL_ATTEMPTS] == 2


# -- handles ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"input_tokens": -5}, ValueError, "input_tokens must be >= 0"),
        ({"output_tokens": "x"}, TypeError, "output_tokens must be an integer"),
        ({"cache_read_tokens": 1.5}, TypeError, "cache_read_tokens must be an integer"),
        ({"cache_write_tokens": True}, TypeError, "cache_write_tokens must be an integer"),
        ({"finish_reasons": "stop"}, TypeError, "finish_reasons must be a list"),
        ({"finish_reasons": [1]}, TypeError, r"finish_reasons\[0\] must be a str"),
    ],
)
def test_set_usage_refuses_garbage(loopsight_spans, kwargs, error, message):
    with loopsight.llm("m") as call:
        call.set_usage(input_tokens=10, output_tokens=2)
        with pytest.raises(error, match=message):
            call.set_usage(**kwargs)
    (span,) = loopsight_spans.spans
    assert span.attributes[A.USAGE_INPUT_TOKENS] == 10 and span.attributes[A.USAGE_OUTPUT_TOKENS] == 2
    assert A.RESPONSE_FINISH_REASONS not in span.attributes


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"input_tokens": "10"}, TypeError, "input_tokens must be an integer"),
        ({"input_tokens": -1}, ValueError, "input_tokens must be >= 0"),
        ({"finish_reasons": ["stop"]}, TypeError, "finish_reasons must be a tuple"),
        ({"response_model": 4}, TypeError, "response_model must be a str"),
    ],
)
def test_usage_is_checked(kwargs, error, message):
    with pytest.raises(error, match=message):
        loopsight.Usage(**kwargs)


def test_extracted_negative_counts_are_unknown(loopsight_spans):
    @loopsight.llm("m")
    def model():
        return {"usage": {"prompt_tokens": -4, "completion_tokens": 3}}

    model()
    (span,) = loopsight_spans.spans
    assert A.USAGE_INPUT_TOKENS not in span.attributes and span.attributes[A.USAGE_OUTPUT_TOKENS] == 3


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [(-1, ValueError, "retry_after must be a finite number >= 0"), ("x", TypeError, "retry_after must be a number")],
)
def test_retry_after_is_checked(value, error, message):
    with pytest.raises(error, match=message):
        loopsight.TransientToolError("x", retry_after=value)
    assert loopsight.TransientToolError("x", retry_after=2).retry_after == 2


def test_terminate_refuses_unknown_values(loopsight_spans):
    with loopsight.agent("a") as run:
        with pytest.raises(ValueError, match=r"reason must be one of completed, max_steps, .*, error; got 'bogus'"):
            run.terminate("bogus")
        with pytest.raises(ValueError, match="fallback must be one of clarify, retry_later"):
            run.terminate("max_steps", fallback="later")
        run.terminate("timeout", fallback="retry_later")
    (span,) = loopsight_spans.spans
    assert span.attributes[A.TERMINATION_REASON] == "timeout" and span.attributes[A.FALLBACK] == "retry_later"


def test_tool_handle_refuses_unknown_values(loopsight_spans, caplog):
    STATE._logged.clear()
    with caplog.at_level(logging.WARNING, logger="loopsight"), loopsight.tool("t") as t:
        with pytest.raises(ValueError, match="kind must be one of empty_result, garbage; got 'bogus'"):
            t.mark("bogus")
        with pytest.raises(ValueError, match="kind must be one of exact, oscillation"):
            t.loop_detected("circles")
        with pytest.raises(ValueError, match="error_class must be one of transient"):
            t.fail("x", error_class="awful")
        with pytest.raises(ValueError, match="error_class must be one of transient"):
            t.retry("x", error_class="awful")
        with pytest.raises(ValueError, match="backoff_ms must be a finite number >= 0"):
            t.retry("x", backoff_ms=-5)
    assert not [r for r in caplog.records if "internal error" in r.getMessage()]
    (span,) = loopsight_spans.spans
    assert span.status.is_ok and not span.events and A.LOOP_KIND not in span.attributes


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda t: t.retry(None), TypeError, r"error must be a BaseException or str .*, got None"),
        (lambda t: t.retry(""), ValueError, "error must be a non-empty str"),
        (lambda t: t.fail(123), TypeError, r"error must be a BaseException or str .*, got 123"),
        (lambda t: t.fail(None, error_class="fatal"), TypeError, "error must be a BaseException or str"),
        (lambda t: t.loop_detected("semantic", similarity="high"), TypeError, "similarity must be a number"),
        (lambda t: t.loop_detected("semantic", similarity=-0.5), ValueError, "similarity must be a finite number >= 0"),
        (lambda t: t.loop_detected("semantic", similarity=float("nan")), ValueError, "similarity must be a finite"),
        (lambda t: t.set_attribute(5, "v"), TypeError, "key must be a str"),
        (lambda t: t.set_attribute("", "v"), ValueError, "key must be a non-empty str"),
    ],
    ids=[
        "retry-None",
        "retry-empty",
        "fail-int",
        "fail-None",
        "similarity-str",
        "similarity-negative",
        "similarity-nan",
        "key-int",
        "key-empty",
    ],
)
def test_tool_handle_checks_every_argument_the_same_way(loopsight_spans, caplog, call, error, message):
    """retry(None), fail(123) and loop_detected(similarity="high") used to record a wrong span or
    be swallowed as an internal error; like mark() and terminate(), they are refused."""
    STATE._logged.clear()
    with (
        caplog.at_level(logging.WARNING, logger="loopsight"),
        loopsight.tool("t") as t,
        pytest.raises(error, match=message),
    ):
        call(t)
    assert not [r for r in caplog.records if "internal error" in r.getMessage()]
    (span,) = loopsight_spans.spans
    assert span.status.is_ok and not span.events
    assert span.attributes[A.TOOL_ATTEMPTS] == 1 and A.ERROR_TYPE not in span.attributes
    assert A.LOOP_KIND not in span.attributes
    with pytest.raises(error, match=message):
        call(t)  # on an ended handle too


def test_valid_handle_arguments_are_recorded(loopsight_spans):
    with loopsight.tool("t") as t:
        t.retry("429")
        t.loop_detected("semantic", similarity=0.93)
        t.set_attribute("k", "v")
        t.fail(TimeoutError("slow"))
    (span,) = loopsight_spans.spans
    assert span.attributes[A.TOOL_ATTEMPTS] == 2 and span.attributes[A.LOOP_SIMILARITY] == 0.93
    assert span.attributes["k"] == "v" and span.attributes[A.ERROR_TYPE] == "TimeoutError"


def test_check_verdicts_outside_the_vocabulary_never_break_the_call(loopsight_spans, caplog):
    """A user check answering nonsense at call time is logged: the decorated call still returns."""
    STATE._logged.clear()

    @loopsight.tool(check=lambda r: "meh")
    def f():
        return 1

    with caplog.at_level(logging.WARNING, logger="loopsight"):
        assert f() == 1
    assert any("internal error" in r.getMessage() for r in caplog.records)
    STATE._logged.clear()
