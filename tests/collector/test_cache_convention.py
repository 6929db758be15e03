"""Cached and cache-write input tokens, from every producer's spelling, to one convention (issue 22).

Stored input tokens include the cached and cache-write tokens (OpenTelemetry GenAI); a producer
that counts them apart (Anthropic's raw usage, Langfuse's usage details) has them added
(``loopsight.vocabulary.CACHE_CONVENTION``).
"""

from __future__ import annotations

import json

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from loopsight.ingest.normalize import Limits, normalize_span


def _llm_row(attrs: dict[str, object]):
    kvs = []
    for key, value in attrs.items():
        any_value = AnyValue(int_value=value) if isinstance(value, int) else AnyValue(string_value=str(value))
        kvs.append(KeyValue(key=key, value=any_value))
    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="chat m", attributes=kvs)
    row = normalize_span(span, {}, "", "", Limits())
    assert row.span_type == "llm"
    return row.input_tokens, row.cache_read_tokens, row.cache_write_tokens


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        (  # OTel GenAI (current): included
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.usage.input_tokens": 1000,
                "gen_ai.usage.cache_read.input_tokens": 800,
                "gen_ai.usage.cache_creation.input_tokens": 100,
            },
            (1000, 800, 100),
        ),
        (  # OpenLLMetry's older spellings (Anthropic: it sums the cache into the input itself)
            {
                "gen_ai.system": "anthropic",
                "gen_ai.request.model": "claude-sonnet-4-5",
                "gen_ai.usage.prompt_tokens": 3512,
                "gen_ai.usage.cache_read_input_tokens": 3000,
                "gen_ai.usage.cache_creation_input_tokens": 500,
            },
            (3512, 3000, 500),
        ),
        (  # a producer that copied Anthropic's raw input_tokens (12) beside the cache: the cache is added
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.usage.input_tokens": 12,
                "gen_ai.usage.cache_read_input_tokens": 3000,
                "gen_ai.usage.cache_write_input_tokens": 500,
            },
            (3512, 3000, 500),
        ),
        (  # OpenInference: the prompt count includes the details
            {
                "openinference.span.kind": "LLM",
                "llm.token_count.prompt": 210,
                "llm.token_count.prompt_details.cache_read": 192,
                "llm.token_count.prompt_details.cache_write": 0,
            },
            (210, 192, 0),
        ),
        (  # OpenLLMetry's OpenAI details spelling
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.usage.input_tokens": 165,
                "gen_ai.usage.prompt_tokens_details.cached_tokens": 128,
            },
            (165, 128, None),
        ),
        (  # Pydantic AI's usage details
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.usage.input_tokens": 2000,
                "gen_ai.usage.details.cache_read_tokens": 1500,
                "gen_ai.usage.details.cache_write_tokens": 300,
            },
            (2000, 1500, 300),
        ),
        (  # cache counts but no input count: the input is at least the cache
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.usage.output_tokens": 5,
                "gen_ai.usage.cache_read.input_tokens": 64,
            },
            (64, 64, None),
        ),
    ],
)
def test_span_attributes(attrs, expected):
    assert _llm_row(attrs) == expected


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        # the SDK's OpenAI wrapper: raw OpenAI usage, whose prompt count includes the cached part
        (
            {"prompt_tokens": 120, "completion_tokens": 18, "prompt_tokens_details": {"cached_tokens": 64}},
            (120, 64, None),
        ),
        # Langfuse's own keys: ``input`` is the uncached part
        ({"input": 56, "output": 18, "input_cached_tokens": 64}, (120, 64, None)),
        # Anthropic through Langfuse: input, cache reads and cache writes billed apart
        (
            {"input": 12, "output": 40, "cache_read_input_tokens": 3000, "cache_creation_input_tokens": 500},
            (3512, 3000, 500),
        ),
        ({"input": 120, "output": 30, "total": 150}, (120, None, None)),
    ],
)
def test_langfuse_usage_details(usage, expected):
    attrs = {
        "langfuse.observation.type": "generation",
        "langfuse.observation.model.name": "gpt-4o-mini",
        "langfuse.observation.usage_details": json.dumps(usage),
    }
    assert _llm_row(attrs) == expected
