"""Default classification, loopsight's own error classes and user registration."""

from __future__ import annotations

import json

import httpx
import pytest

import loopsight
from loopsight.instrumentation import errors
from loopsight.instrumentation.errors import classify


def _http_error(status: int) -> httpx.HTTPStatusError:
    request = httpx.Request("GET", "http://127.0.0.1/x")
    response = httpx.Response(status, request=request)
    return httpx.HTTPStatusError(f"status {status}", request=request, response=response)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (TimeoutError(), ("TimeoutError", "transient")),
        (TimeoutError(), ("TimeoutError", "transient")),
        (TimeoutError(), ("TimeoutError", "transient")),
        (ConnectionRefusedError(), ("ConnectionRefusedError", "transient")),
        (httpx.ConnectTimeout("t"), ("ConnectTimeout", "transient")),
        (httpx.ConnectError("c"), ("ConnectError", "transient")),
        (httpx.RemoteProtocolError("r"), ("RemoteProtocolError", "transient")),
        (_http_error(429), ("429", "transient")),
        (_http_error(503), ("503", "transient")),
        (_http_error(500), ("500", "transient")),
        (_http_error(401), ("401", "fatal")),
        (_http_error(403), ("403", "fatal")),
        (_http_error(404), ("404", "permanent")),
        (_http_error(422), ("422", "invalid_argument")),
        (ValueError("bad"), ("ValueError", "invalid_argument")),
        (TypeError("bad"), ("TypeError", "invalid_argument")),
        (json.JSONDecodeError("x", "doc", 0), ("JSONDecodeError", "invalid_argument")),
        (PermissionError(), ("PermissionError", "fatal")),
        (FileNotFoundError(), ("FileNotFoundError", "permanent")),
        (RuntimeError("?"), ("RuntimeError", "permanent")),
        (loopsight.TransientToolError("x"), ("TransientToolError", "transient")),
        (loopsight.InvalidArgumentError("x", error_type="schema"), ("schema", "invalid_argument")),
        (loopsight.PermanentToolError("x", error_type="not_found"), ("not_found", "permanent")),
        (loopsight.FatalToolError("x", error_type="permission_denied"), ("permission_denied", "fatal")),
    ],
)
def test_default_classification(exc, expected):
    assert loopsight.classify(exc) == expected


def test_jsonschema_validation_error():
    jsonschema = pytest.importorskip("jsonschema")
    with pytest.raises(jsonschema.ValidationError) as info:
        jsonschema.validate({"q": 1}, {"type": "object", "properties": {"q": {"type": "string"}}})
    assert loopsight.classify(info.value) == ("ValidationError", "invalid_argument")


def test_pydantic_validation_error():
    pydantic = pytest.importorskip("pydantic")

    class Args(pydantic.BaseModel):
        q: int

    with pytest.raises(pydantic.ValidationError) as info:
        Args(q="nope")
    assert loopsight.classify(info.value)[1] == "invalid_argument"


def test_sdk_status_errors():
    openai = pytest.importorskip("openai")
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    for status, cls, expected in [
        (429, openai.RateLimitError, "transient"),
        (401, openai.AuthenticationError, "fatal"),
        (404, openai.NotFoundError, "permanent"),
        (500, openai.InternalServerError, "transient"),
    ]:
        exc = cls("x", response=httpx.Response(status, request=request), body=None)
        assert loopsight.classify(exc) == (str(status), expected)
    assert loopsight.classify(openai.APITimeoutError(request=request))[1] == "transient"
    assert loopsight.classify(openai.APIConnectionError(request=request))[1] == "transient"


def test_register_error_class_and_classifier():
    class OutOfStock(Exception):
        pass

    class BackOrdered(OutOfStock):
        pass

    class Quota(Exception):
        pass

    loopsight.register_error_class(OutOfStock, "permanent")
    try:
        assert loopsight.classify(BackOrdered()) == ("BackOrdered", "permanent")
        loopsight.register_error_class(ValueError, "garbage")
        assert loopsight.classify(ValueError()) == ("ValueError", "garbage")
    finally:
        errors._registered.clear()

    def by_message(exc):
        if isinstance(exc, Quota):
            return ("quota", "fatal")
        if "flaky" in str(exc):
            return "transient"
        raise RuntimeError("classifier bug")  # ignored

    loopsight.register_classifier(by_message)
    try:
        assert loopsight.classify(Quota()) == ("quota", "fatal")
        assert loopsight.classify(RuntimeError("flaky net")) == ("RuntimeError", "transient")
        assert loopsight.classify(KeyError("k")) == ("KeyError", "permanent")
    finally:
        errors.unregister_classifier(by_message)


def test_registration_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown error class"):
        loopsight.register_error_class(KeyError, "meh")
    with pytest.raises(TypeError):
        loopsight.register_error_class("KeyError", "fatal")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        loopsight.register_classifier(42)  # type: ignore[arg-type]


def test_retry_after_becomes_backoff(loopsight_spans):
    with loopsight.tool("t") as t:
        t.retry(loopsight.TransientToolError("slow down", error_type="429", retry_after=1.5))
    (span,) = loopsight_spans.spans
    assert dict(span.events[0].attributes) == {
        "error.type": "429",
        "loopsight.error.class": "transient",
        "loopsight.backoff_ms": 1500.0,
    }


class _HTTPError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status


@pytest.mark.parametrize("status", [400, 401, 403, 404, 407, 408, 409, 410, 422, 425, 429, 500, 502, 503, 504])
def test_a_status_gets_one_class_from_the_decorators_and_the_collector(status: int) -> None:
    from loopsight.vocabulary import error_class_for

    error_type, error_class = classify(_HTTPError(status))
    assert error_type == str(status)
    assert error_class_for(error_type) == error_class  # what the collector gives another producer's error.type
    assert error_class_for(f"HTTP {status} from upstream") == error_class


@pytest.mark.parametrize(
    "exc",
    [TimeoutError(), ConnectionResetError(), ValueError(), TypeError(), PermissionError(), FileNotFoundError()],
)
def test_an_exception_type_gets_one_class_from_the_decorators_and_the_collector(exc: BaseException) -> None:
    from loopsight.vocabulary import error_class_for

    error_type, error_class = classify(exc)
    assert error_class_for(error_type) == error_class


def test_407_is_fatal_and_408_transient_for_every_producer() -> None:
    from loopsight.vocabulary import error_class_for

    assert [error_class_for(t) for t in ("407", "408")] == ["fatal", "transient"]
    assert [classify(_HTTPError(s))[1] for s in (407, 408)] == ["fatal", "transient"]
