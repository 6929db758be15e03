"""Prompt-cache tokens: read from OpenAI and Anthropic responses, recorded on the chat span (issue 22).

The span follows OpenTelemetry GenAI: ``gen_ai.usage.input_tokens`` includes the cached
(``gen_ai.usage.cache_read.input_tokens``) and cache-write
(``gen_ai.usage.cache_creation.input_tokens``) tokens, whichever way the provider counts them.
"""

from __future__ import annotations

import pytest

import loopsight
from loopsight import attributes as A
from loopsight.instrumentation.tokens import Usage, extract_usage

OPENAI_CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}],
    "usage": {
        "prompt_tokens": 2048,
        "completion_tokens": 20,
        "total_tokens": 2068,
        "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
    },
}
ANTHROPIC = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [{"type": "text", "text": "hi"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    # Anthropic counts input_tokens apart from the cache: 12 uncached + 3000 read + 500 written
    "usage": {
        "input_tokens": 12,
        "output_tokens": 40,
        "cache_read_input_tokens": 3000,
        "cache_creation_input_tokens": 500,
    },
}


def _chat_attributes(spans):
    (span,) = [s for s in spans if s.name.startswith("chat")]
    return span.attributes


def test_openai_sdk_response_records_cached_tokens(loopsight_spans):
    pytest.importorskip("openai")
    from openai.types.chat import ChatCompletion

    @loopsight.llm(model="gpt-4o-mini", provider="openai")
    def call_model():
        return ChatCompletion.model_validate(OPENAI_CHAT)

    call_model()
    attrs = _chat_attributes(loopsight_spans.spans)
    assert attrs[A.USAGE_INPUT_TOKENS] == 2048  # OpenAI's prompt count already includes the cached part
    assert attrs[A.USAGE_CACHE_READ_INPUT_TOKENS] == 1920
    assert A.USAGE_CACHE_CREATION_INPUT_TOKENS not in attrs


def test_openai_responses_api_cached_tokens():
    usage = extract_usage(
        {
            "object": "response",
            "status": "completed",
            "output": [],
            "model": "gpt-4.1",
            "usage": {"input_tokens": 5000, "output_tokens": 10, "input_tokens_details": {"cached_tokens": 4096}},
        }
    )
    assert usage is not None
    assert (usage.input_tokens, usage.cache_read_tokens) == (5000, 4096)


def test_anthropic_sdk_message_adds_the_cache_to_the_input(loopsight_spans):
    pytest.importorskip("anthropic")
    from anthropic.types import Message

    @loopsight.llm(model="claude-sonnet-4-5", provider="anthropic")
    def call_model():
        return Message.model_validate(ANTHROPIC)

    call_model()
    attrs = _chat_attributes(loopsight_spans.spans)
    assert attrs[A.USAGE_INPUT_TOKENS] == 12 + 3000 + 500
    assert attrs[A.USAGE_CACHE_READ_INPUT_TOKENS] == 3000
    assert attrs[A.USAGE_CACHE_CREATION_INPUT_TOKENS] == 500
    assert attrs[A.USAGE_OUTPUT_TOKENS] == 40


def test_anthropic_stream_events_carry_the_cache(loopsight_spans):
    # The documented event shapes: message_start holds the message (and its usage), message_delta the output.
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [],
                "usage": {"input_tokens": 8, "output_tokens": 1, "cache_read_input_tokens": 2048},
            },
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 30}},
    ]
    with loopsight.llm(model="claude-sonnet-4-5") as call:
        for event in events:
            call.record(event)
    attrs = _chat_attributes(loopsight_spans.spans)
    assert attrs[A.USAGE_INPUT_TOKENS] == 8 + 2048
    assert attrs[A.USAGE_CACHE_READ_INPUT_TOKENS] == 2048
    assert attrs[A.USAGE_OUTPUT_TOKENS] == 30
    assert attrs[A.RESPONSE_MODEL] == "claude-sonnet-4-5-20250929"


def test_set_usage_takes_cache_counts(loopsight_spans):
    with loopsight.llm(model="gpt-4o") as call:
        call.set_usage(input_tokens=1500, output_tokens=9, cache_read_tokens=1024, cache_write_tokens=0)
    attrs = _chat_attributes(loopsight_spans.spans)
    assert (attrs[A.USAGE_CACHE_READ_INPUT_TOKENS], attrs[A.USAGE_CACHE_CREATION_INPUT_TOKENS]) == (1024, 0)


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (  # Bedrock Converse counts the cache apart, like Anthropic
            {
                "stopReason": "end_turn",
                "usage": {
                    "inputTokens": 20,
                    "outputTokens": 5,
                    "cacheReadInputTokens": 900,
                    "cacheWriteInputTokens": 80,
                },
            },
            Usage(1000, 5, ("end_turn",), None, 900, 80),
        ),
        (  # Gemini's prompt count includes the cached content
            {
                "candidates": [{"finish_reason": "STOP"}],
                "usage_metadata": {
                    "prompt_token_count": 4000,
                    "candidates_token_count": 7,
                    "cached_content_token_count": 3500,
                },
            },
            Usage(4000, 7, ("STOP",), None, 3500, None),
        ),
        (  # LiteLLM on Anthropic: OpenAI-shaped, the prompt count includes the cache
            {
                "model": "claude-3-5-sonnet-20241022",
                "choices": [{"finish_reason": "stop"}],
                "usage": {
                    "prompt_tokens": 3100,
                    "completion_tokens": 9,
                    "prompt_tokens_details": {"cached_tokens": 3000},
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 3000,
                },
            },
            Usage(3100, 9, ("stop",), "claude-3-5-sonnet-20241022", 3000, 0),
        ),
    ],
)
def test_other_providers_cache_counts(payload, expected):
    assert extract_usage(payload) == expected


def test_gemini_thinking_and_tool_use_prompt_tokens_are_billed_tokens(loopsight_spans):
    # Gemini counts apart what it bills with the others: its thinking (thoughts_token_count) at the output
    # price, the tool-use prompt (tool_use_prompt_token_count) at the input price; total_token_count sums all.
    response = {
        "candidates": [{"finish_reason": "STOP"}],
        "usage_metadata": {
            "prompt_token_count": 1200,
            "cached_content_token_count": 1000,
            "tool_use_prompt_token_count": 30,
            "candidates_token_count": 40,
            "thoughts_token_count": 900,
            "total_token_count": 2170,
        },
    }

    @loopsight.llm(model="gemini-2.5-flash", provider="gcp.gemini")
    def call_model():
        return response

    call_model()
    attrs = _chat_attributes(loopsight_spans.spans)
    assert attrs[A.USAGE_INPUT_TOKENS] + attrs[A.USAGE_OUTPUT_TOKENS] == 2170
    assert (attrs[A.USAGE_INPUT_TOKENS], attrs[A.USAGE_OUTPUT_TOKENS]) == (1230, 940)
    assert attrs[A.USAGE_CACHE_READ_INPUT_TOKENS] == 1000
    # a thinking-only answer still has its output
    only_thoughts = {"usage_metadata": {"prompt_token_count": 10, "thoughts_token_count": 50}}
    assert extract_usage(only_thoughts) == Usage(10, 50, (), None)
