"""Token usage and finish reasons read from what a model call returns.

Understands OpenAI chat-completions and Responses objects (and their dict forms), Anthropic
messages (and their streaming ``message_start`` / ``message_delta`` events), LiteLLM responses,
Gemini ``usage_metadata``, Bedrock Converse dicts, and any object whose ``usage`` has
input/prompt and output/completion token counts. Anything else yields ``None``; a user extractor
(``loopsight.llm(extract=...)``) covers the rest.

Cached input tokens (prompt caching) are read too: OpenAI's
``prompt_tokens_details.cached_tokens`` / ``input_tokens_details.cached_tokens``, Anthropic's
``cache_read_input_tokens`` and ``cache_creation_input_tokens``, Gemini's
``cached_content_token_count``, Bedrock's ``cacheReadInputTokens`` / ``cacheWriteInputTokens``.
As OpenTelemetry GenAI counts them, ``input_tokens`` *includes* the cached and cache-write
tokens (Anthropic and Bedrock report them apart: they are added).
Gemini's thinking (``thoughts_token_count``) is output and its tool-use prompt
(``tool_use_prompt_token_count``) input, as Google bills them (it reports them apart: they are added).

Example:
    >>> extract_usage({"usage": {"prompt_tokens": 12, "completion_tokens": 3},
    ...                "choices": [{"finish_reason": "stop"}]})
    Usage(input_tokens=12, output_tokens=3, finish_reasons=('stop',), response_model=None, cache_read_tokens=None, cache_write_tokens=None)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from loopsight import checks


@dataclasses.dataclass(frozen=True)
class Usage:
    """Tokens and finish reasons of one model call, as extract functions return them.

    ``input_tokens`` includes ``cache_read_tokens`` (input served from the provider's prompt
    cache) and ``cache_write_tokens`` (input written to it), as OpenTelemetry GenAI counts them.

    Example:
        >>> Usage(120, 30, ("tool_calls",)).total_tokens
        150
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reasons: tuple[str, ...] = ()
    response_model: str | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
            checks.non_negative_int(name, getattr(self, name), optional=True)
        if not isinstance(self.finish_reasons, tuple):
            raise TypeError(f"finish_reasons must be a tuple of str, got {self.finish_reasons!r}")
        checks.each("finish_reasons", self.finish_reasons, checks.text)
        checks.text("response_model", self.response_model, optional=True)

    @property
    def total_tokens(self) -> int:
        return (self.input_tokens or 0) + (self.output_tokens or 0)


_INPUT_KEYS = ("input_tokens", "prompt_tokens", "prompt_token_count", "inputTokens")
_OUTPUT_KEYS = ("output_tokens", "completion_tokens", "candidates_token_count", "outputTokens")
# Cache reads: OpenAI (chat, Responses) inside the details, Anthropic and LiteLLM beside the counts,
# Gemini, Bedrock Converse.
_DETAILS_KEYS = ("prompt_tokens_details", "input_tokens_details")
_CACHE_READ_KEYS = ("cache_read_input_tokens", "cached_content_token_count", "cacheReadInputTokens")
_CACHE_WRITE_KEYS = ("cache_creation_input_tokens", "cacheWriteInputTokens")
# Anthropic's input_tokens and Bedrock's inputTokens leave the cache out; OpenAI's, LiteLLM's and Gemini's include it.
_CACHE_APART = {
    "input_tokens": ("cache_creation_input_tokens", "cache_read_input_tokens"),
    "inputTokens": ("cacheReadInputTokens", "cacheWriteInputTokens"),
}
# Gemini counts apart tokens it bills with the others (its total_token_count sums them all): the
# tool-use prompt at the input price, the thinking at the output price.
_GEMINI_APART = {"tool_use_prompt_token_count": "input", "thoughts_token_count": "output"}


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


def _first_int(obj: Any, keys: tuple[str, ...]) -> tuple[str | None, int | None]:
    for key in keys:
        value = _int(_get(obj, key))
        if value is not None:
            return key, value
    return None, None


def _reason(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value or None
    name = getattr(value, "name", None)  # enums (Gemini FinishReason)
    return str(name if isinstance(name, str) else value)


def _finish_reasons(result: Any) -> tuple[str, ...]:
    choices = _get(result, "choices")
    if isinstance(choices, (list, tuple)):
        reasons = (_reason(_get(c, "finish_reason")) for c in choices)
        return tuple(r for r in reasons if r)
    for key in ("stop_reason", "stopReason"):  # Anthropic, Bedrock Converse
        reason = _reason(_get(result, key))
        if reason:
            return (reason,)
    if _get(result, "type") == "message_delta":  # Anthropic stream: the stop reason is the delta's
        reason = _reason(_get(_get(result, "delta"), "stop_reason"))
        if reason:
            return (reason,)
    candidates = _get(result, "candidates")  # Gemini
    if isinstance(candidates, (list, tuple)):
        reasons = (_reason(_get(c, "finish_reason")) for c in candidates)
        return tuple(r for r in reasons if r)
    if _get(result, "object") == "response" or (
        _get(result, "output") is not None and isinstance(_get(result, "status"), str)
    ):
        details = _get(result, "incomplete_details")  # OpenAI Responses
        reason = _reason(_get(details, "reason")) if details is not None else None
        status = _reason(_get(result, "status"))
        return (reason,) if reason else ((status,) if status else ())
    return ()


def extract_usage(result: Any) -> Usage | None:
    """Usage of a model response in any supported shape, or ``None``; never raises.

    Example:
        >>> extract_usage({"usage": {"input_tokens": 10, "output_tokens": 2,
        ...                          "cache_read_input_tokens": 5}, "stop_reason": "end_turn"})
        Usage(input_tokens=15, output_tokens=2, finish_reasons=('end_turn',), response_model=None, cache_read_tokens=5, cache_write_tokens=None)
    """
    try:
        return _extract(result)
    except Exception:
        return None


def _extract(result: Any) -> Usage | None:
    if result is None or isinstance(result, (str, bytes, int, float, bool)):
        return None
    if isinstance(result, Usage):
        return result
    usage = _get(result, "usage")
    if usage is None:
        usage = _get(result, "usage_metadata")
    if usage is None and _get(result, "type") == "message_start":  # Anthropic stream: the usage is the message's
        usage = _get(_get(result, "message"), "usage")
    if usage is None and (_get(result, "prompt_tokens") is not None or _get(result, "input_tokens") is not None):
        usage = result
    in_key = in_tokens = out_tokens = cache_read = cache_write = None
    if usage is not None:
        in_key, in_tokens = _first_int(usage, _INPUT_KEYS)
        _, out_tokens = _first_int(usage, _OUTPUT_KEYS)
        cache_read, cache_write = _cache(usage)
        for key in _CACHE_APART.get(in_key or "", ()):
            extra = _int(_get(usage, key))
            if extra:
                in_tokens = (in_tokens or 0) + extra
        if in_key == "prompt_token_count":
            for key, side in _GEMINI_APART.items():
                extra = _int(_get(usage, key))
                if extra and side == "input":
                    in_tokens = (in_tokens or 0) + extra
                elif extra:
                    out_tokens = (out_tokens or 0) + extra
    reasons = _finish_reasons(result)
    model = _get(result, "model")
    if model is None and _get(result, "type") == "message_start":
        model = _get(_get(result, "message"), "model")
    model = model if isinstance(model, str) and model else None
    if in_tokens is None and out_tokens is None and not reasons:
        return None
    return Usage(in_tokens, out_tokens, reasons, model, cache_read, cache_write)


def _cache(usage: Any) -> tuple[int | None, int | None]:
    """Cached and cache-write input tokens of a usage object (``None`` when it reports none)."""
    read = None
    for key in _DETAILS_KEYS:
        details = _get(usage, key)
        if details is not None:
            read = _int(_get(details, "cached_tokens"))
            if read is not None:
                break
    if read is None:
        _, read = _first_int(usage, _CACHE_READ_KEYS)
    _, write = _first_int(usage, _CACHE_WRITE_KEYS)
    if write is None:
        for key in _DETAILS_KEYS:  # OpenAI Responses (some gateways) put cache writes in the details too
            details = _get(usage, key)
            if details is not None:
                write = _int(_get(details, "cache_write_tokens")) or _int(_get(details, "cache_creation_tokens"))
                if write is not None:
                    break
    return read, write


def coerce_usage(value: Any) -> Usage | None:
    """Turn what a user extractor returned (Usage, dict, or a response) into a Usage."""
    if value is None or isinstance(value, Usage):
        return value
    if isinstance(value, Mapping) and "usage" not in value:
        reasons = value.get("finish_reasons") or ()
        if isinstance(reasons, str):
            reasons = (reasons,)
        _, in_tokens = _first_int(value, _INPUT_KEYS)
        _, out_tokens = _first_int(value, _OUTPUT_KEYS)
        model = value.get("response_model") or value.get("model")
        read = _int(value.get("cache_read_tokens"))
        write = _int(value.get("cache_write_tokens"))
        return Usage(
            in_tokens,
            out_tokens,
            tuple(str(r) for r in reasons),
            model if isinstance(model, str) else None,
            read,
            write,
        )
    return extract_usage(value)
