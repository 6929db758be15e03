"""Token and finish-reason extraction for each supported response shape."""

from __future__ import annotations

import types

import pytest

import loopsight
from loopsight import attributes as A
from loopsight.instrumentation.tokens import Usage, coerce_usage, extract_usage

OPENAI_CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "gpt-4o-2024-08-06",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "logprobs": None,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q":"x"}'}}
                ],
            },
        },
        {"index": 1, "finish_reason": "stop", "logprobs": None, "message": {"role": "assistant", "content": "hi"}},
    ],
    "usage": {
        "prompt_tokens": 812,
        "completion_tokens": 41,
        "total_tokens": 853,
        "prompt_tokens_details": {"cached_tokens": 512},
    },
}
OPENAI_RESPONSES = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1700000000.0,
    "model": "gpt-4.1",
    "status": "completed",
    "error": None,
    "incomplete_details": None,
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hi", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 300,
        "output_tokens": 20,
        "total_tokens": 320,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    },
}
OPENAI_RESPONSES_INCOMPLETE = {
    **OPENAI_RESPONSES,
    "status": "incomplete",
    "incomplete_details": {"reason": "max_output_tokens"},
}
ANTHROPIC = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "x"}}],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 100,
        "output_tokens": 25,
        "cache_creation_input_tokens": 10,
        "cache_read_input_tokens": 200,
    },
}
# LiteLLM's ModelResponse is OpenAI-shaped (documented JSON of `litellm.completion`).
LITELLM = {
    "id": "chatcmpl-2",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "claude-3-haiku-20240307",
    "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": "..."}}],
    "usage": {"prompt_tokens": 17, "completion_tokens": 64, "total_tokens": 81},
}
GEMINI = {
    "candidates": [{"finish_reason": "STOP"}],
    "usage_metadata": {"prompt_token_count": 9, "candidates_token_count": 4},
}
BEDROCK = {
    "output": {"message": {}},
    "stopReason": "end_turn",
    "usage": {"inputTokens": 30, "outputTokens": 5, "totalTokens": 35},
}


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (OPENAI_CHAT, Usage(812, 41, ("tool_calls", "stop"), "gpt-4o-2024-08-06", cache_read_tokens=512)),
        (OPENAI_RESPONSES, Usage(300, 20, ("completed",), "gpt-4.1", cache_read_tokens=0)),
        (OPENAI_RESPONSES_INCOMPLETE, Usage(300, 20, ("max_output_tokens",), "gpt-4.1", cache_read_tokens=0)),
        (ANTHROPIC, Usage(310, 25, ("tool_use",), "claude-sonnet-4-5", cache_read_tokens=200, cache_write_tokens=10)),
        (LITELLM, Usage(17, 64, ("length",), "claude-3-haiku-20240307")),
        (GEMINI, Usage(9, 4, ("STOP",), None)),
        (BEDROCK, Usage(30, 5, ("end_turn",), None)),
    ],
)
def test_documented_json_shapes(payload, expected):
    assert extract_usage(payload) == expected


def test_openai_sdk_objects():
    openai = pytest.importorskip("openai")
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.responses import Response

    chat = ChatCompletion.model_validate(OPENAI_CHAT)
    assert extract_usage(chat) == Usage(812, 41, ("tool_calls", "stop"), "gpt-4o-2024-08-06", cache_read_tokens=512)
    resp = Response.model_validate(OPENAI_RESPONSES_INCOMPLETE)
    assert extract_usage(resp) == Usage(300, 20, ("max_output_tokens",), "gpt-4.1", cache_read_tokens=0)
    last_chunk = ChatCompletionChunk.model_validate(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4o",
            "choices": [],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        }
    )
    assert extract_usage(last_chunk) == Usage(5, 2, (), "gpt-4o")
    assert openai.__version__


def test_anthropic_sdk_objects():
    pytest.importorskip("anthropic")
    from anthropic.types import Message

    msg = Message.model_validate(ANTHROPIC)
    assert extract_usage(msg) == Usage(
        310, 25, ("tool_use",), "claude-sonnet-4-5", cache_read_tokens=200, cache_write_tokens=10
    )


def test_generic_usage_objects():
    obj = types.SimpleNamespace(usage=types.SimpleNamespace(prompt_tokens=3, completion_tokens=4))
    assert extract_usage(obj) == Usage(3, 4, (), None)
    bare = types.SimpleNamespace(input_tokens=8, output_tokens=1)
    assert extract_usage(bare) == Usage(8, 1, (), None)


@pytest.mark.parametrize("junk", [None, "text", 3, b"x", [], {}, {"usage": "lots"}, {"choices": "nope"}, object()])
def test_unrecognised_results_give_none(junk):
    assert extract_usage(junk) is None


def test_coerce_user_extractor_results():
    assert coerce_usage({"input_tokens": 1, "output_tokens": 2, "finish_reasons": "stop"}) == Usage(
        1, 2, ("stop",), None
    )
    assert coerce_usage({"prompt_tokens": 1}) == Usage(1, None, (), None)
    assert coerce_usage(Usage(4, 5)) == Usage(4, 5)
    assert coerce_usage(OPENAI_CHAT).input_tokens == 812


def test_user_extractor_on_decorated_llm(loopsight_spans):
    @loopsight.llm(model="local", extract=lambda r: loopsight.Usage(r["in"], r["out"], ("eos",)))
    def local_model(prompt):
        return {"in": 11, "out": 2, "text": "ok"}

    @loopsight.llm(model="local", extract=lambda r: {"input_tokens": len(r), "output_tokens": 1})
    def other(prompt):
        return "abcd"

    local_model("p")
    other("p")
    first, second = loopsight_spans.spans
    assert first.attributes[A.USAGE_INPUT_TOKENS] == 11
    assert first.attributes[A.RESPONSE_FINISH_REASONS] == ("eos",)
    assert second.attributes[A.USAGE_INPUT_TOKENS] == 4


def test_failing_extractor_is_swallowed(loopsight_spans):
    @loopsight.llm(model="m", extract=lambda r: 1 / 0)
    def model():
        return "fine"

    assert model() == "fine"
    (span,) = loopsight_spans.spans
    assert A.USAGE_INPUT_TOKENS not in span.attributes


def test_anthropic_stream_events_merge(loopsight_spans):
    # message_start carries input tokens, message_delta the cumulative output and stop reason
    events = [
        {"type": "message_start", "message": {}, "usage": {"input_tokens": 50, "output_tokens": 1}},
        {"type": "content_block_delta", "delta": {"text": "hi"}},
        {"type": "message_delta", "stop_reason": "end_turn", "usage": {"output_tokens": 12}},
    ]

    with loopsight.llm(model="claude") as call:
        for event in events:
            call.record(event)
    (span,) = loopsight_spans.spans
    assert span.attributes[A.USAGE_INPUT_TOKENS] == 50
    assert span.attributes[A.USAGE_OUTPUT_TOKENS] == 12
    assert span.attributes[A.RESPONSE_FINISH_REASONS] == ("end_turn",)


def test_anthropic_sdk_stream_events(loopsight_spans):
    """The SDK's events as a stream yields them: the stop reason is in ``delta.stop_reason`` (it
    was not read) and the input tokens in ``message.usage``."""
    from anthropic.types import Message, MessageDeltaUsage, RawMessageDeltaEvent, RawMessageStartEvent
    from anthropic.types import Usage as AnthropicUsage
    from anthropic.types.raw_message_delta_event import Delta

    message = Message(
        id="m",
        type="message",
        role="assistant",
        model="claude-3-5-sonnet",
        content=[],
        stop_reason=None,
        stop_sequence=None,
        usage=AnthropicUsage(input_tokens=100, output_tokens=1),
    )

    @loopsight.llm(model="claude-3-5-sonnet", provider="anthropic")
    def stream():
        yield RawMessageStartEvent(type="message_start", message=message)
        yield RawMessageDeltaEvent(
            type="message_delta",
            delta=Delta(stop_reason="tool_use", stop_sequence=None),
            usage=MessageDeltaUsage(output_tokens=42),
        )

    assert len(list(stream())) == 2
    (span,) = loopsight_spans.spans
    assert span.attributes[A.USAGE_INPUT_TOKENS] == 100
    assert span.attributes[A.USAGE_OUTPUT_TOKENS] == 42
    assert span.attributes[A.RESPONSE_FINISH_REASONS] == ("tool_use",)


def _openai_streaming_client(asynchronous: bool = False):
    import json

    import httpx
    import openai

    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o"}
    chunks = [
        chunk | {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]},
        chunk | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        chunk | {"choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}},
    ]
    body = ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    if asynchronous:
        http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
        return openai.AsyncOpenAI(api_key="sk-test", base_url="http://model.invalid/v1", http_client=http)
    http_sync = httpx.Client(transport=httpx.MockTransport(answer))
    return openai.OpenAI(api_key="sk-test", base_url="http://model.invalid/v1", http_client=http_sync)


def test_a_returned_stream_is_read_through_and_its_span_lasts_the_generation(loopsight_spans):
    """The README's ``return client.chat.completions.create(..., stream=True)`` ended the span when
    the stream was returned: no tokens, no finish reason, and none of the generation's time."""
    import openai

    client = _openai_streaming_client()

    @loopsight.llm(model="gpt-4o")
    def call_model(messages):
        return client.chat.completions.create(
            model="gpt-4o", messages=messages, stream=True, stream_options={"include_usage": True}
        )

    stream = call_model([{"role": "user", "content": "hi"}])
    assert loopsight_spans.spans == []  # not ended until the stream is read
    assert isinstance(stream, openai.Stream)  # code that checks what create() returned still works
    chunks = list(stream)
    assert chunks[-1].usage.prompt_tokens == 120 and stream.response.status_code == 200  # the stream's own API
    (span,) = loopsight_spans.spans
    assert span.attributes[A.USAGE_INPUT_TOKENS] == 120 and span.attributes[A.USAGE_OUTPUT_TOKENS] == 30
    assert span.attributes[A.RESPONSE_FINISH_REASONS] == ("stop",)

    with call_model([{"role": "user", "content": "again"}]) as stream:
        next(iter(stream))  # closed after one chunk: the span ends with what was read
    assert len(loopsight_spans.spans) == 2


def test_a_returned_async_stream_is_read_through(loopsight_spans):
    import asyncio

    import openai

    client = _openai_streaming_client(asynchronous=True)

    @loopsight.llm(model="gpt-4o")
    async def call_model(messages):
        return await client.chat.completions.create(
            model="gpt-4o", messages=messages, stream=True, stream_options={"include_usage": True}
        )

    async def main():
        stream = await call_model([{"role": "user", "content": "hi"}])
        assert loopsight_spans.spans == []
        assert isinstance(stream, openai.AsyncStream)
        return [chunk async for chunk in stream]

    assert len(asyncio.run(main())) == 3
    (span,) = loopsight_spans.spans
    assert span.attributes[A.USAGE_INPUT_TOKENS] == 120
    assert span.attributes[A.RESPONSE_FINISH_REASONS] == ("stop",)


def test_child_instrumentor_usage_is_not_counted_twice(loopsight_spans):
    # What opentelemetry-instrumentation-openai-v2 emits inside our decorated call.
    other = loopsight_spans.provider.get_tracer("opentelemetry.instrumentation.openai_v2")

    @loopsight.llm(model="gpt-4o")
    def call_model():
        with other.start_as_current_span(
            "chat gpt-4o", attributes={A.OPERATION_NAME: "chat", A.USAGE_INPUT_TOKENS: 70, A.USAGE_OUTPUT_TOKENS: 5}
        ):
            pass
        return OPENAI_CHAT

    with loopsight.agent("a"):
        call_model()
        call_model()
    child, ours, _, _, _ = loopsight_spans.spans
    assert child.parent.span_id == ours.context.span_id
    assert A.USAGE_INPUT_TOKENS not in ours.attributes
    assert ours.attributes[A.USAGE_IN_CHILD] is True
    assert ours.attributes[A.STEP] == 0
    llm_spans = [s for s in loopsight_spans.spans if s.name.startswith("chat")]
    assert sum(s.attributes.get(A.USAGE_INPUT_TOKENS, 0) for s in llm_spans) == 140
