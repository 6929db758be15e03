"""A scripted LLM for tests and the demo: a sequence of turns or a function of the messages.

A turn is an :class:`LLMResponse`, a string (the final answer), a :func:`turn` of tool
calls, or an exception instance (raised, to script model failures). Token usage is
estimated from the messages with the loop's estimator, so budgets behave as with a real
model, and so is the provider's prompt cache (``cache``): ``"openai"`` caches automatically the
longest prefix shared with the previous request, in 128-token blocks, once a prompt reaches 1,024
tokens; ``"anthropic"`` reads back the previous prompt when it is a prefix of this one and writes
the rest (a cache breakpoint on the last message), from 1,024 tokens. The default follows
``provider``.

Example:
    >>> llm = ScriptedLLM([turn(call("search", q="refund policy")), "Refunds take 5 days."])
    >>> first = llm.complete([{"role": "user", "content": "refunds?"}], [])
    >>> first.tool_calls[0].name, first.tool_calls[0].arguments
    ('search', '{"q":"refund policy"}')
    >>> llm.complete([], []).content
    'Refunds take 5 days.'
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from loopsight.react.context import estimate_messages, estimate_tokens
from loopsight.react.llm.base import LLMResponse, ToolCall


@dataclass(frozen=True)
class CallSpec:
    """A tool call in a script; ``arguments`` is raw JSON text (may be malformed on purpose)."""

    name: str
    arguments: str


@dataclass(frozen=True)
class Turn:
    """A model turn asking for tool calls, with optional reasoning text."""

    calls: tuple[CallSpec, ...]
    content: str | None = None


CACHES = ("openai", "anthropic")
MIN_CACHED_PROMPT = 1024  # the shortest prompt either provider caches (tokens)

ScriptItem = LLMResponse | str | Turn | CallSpec | BaseException
ScriptFn = Callable[[Sequence[dict[str, Any]], Sequence[dict[str, Any]]], ScriptItem]


def call(name: str, _args: dict[str, Any] | None = None, *, raw: str | None = None, **kwargs: Any) -> CallSpec:
    """A scripted tool call; ``raw`` gives the argument text verbatim (e.g. broken JSON)."""
    if raw is not None:
        return CallSpec(name, raw)
    args = dict(_args or {}, **kwargs)
    return CallSpec(name, json.dumps(args, ensure_ascii=False, separators=(",", ":")))


def turn(*calls: CallSpec, content: str | None = None) -> Turn:
    """A turn of one or more (parallel) tool calls."""
    return Turn(tuple(calls), content)


def answer(text: str) -> str:
    """A final-answer turn (a plain string works too)."""
    return text


class ScriptedLLM:
    """Plays a script: each call consumes the next item, or asks ``script(messages, tools)``.

    ``latency`` (seconds, or a zero-argument callable returning seconds) is slept per call.
    ``cache`` is the prompt cache simulated (``"openai"``, ``"anthropic"`` or ``None``; by default
    the provider's own, none for others).
    """

    def __init__(
        self,
        script: Sequence[ScriptItem] | ScriptFn,
        *,
        model: str = "scripted-model",
        provider: str = "scripted",
        latency: float | Callable[[], float] = 0.0,
        cache: str | None = "provider",
    ) -> None:
        self.model = model
        self.provider = provider
        self.cache = (provider if provider in CACHES else None) if cache == "provider" else cache
        if self.cache is not None and self.cache not in CACHES:
            raise ValueError(f"cache must be one of {', '.join(CACHES)} or None, not {cache!r}")
        self._previous: tuple[str, list[dict[str, Any]]] | None = None  # the last prompt: tools, messages
        self._script = script
        self._latency = latency
        self._cursor = 0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.calls = 0

    def _delay(self) -> float:
        return float(self._latency() if callable(self._latency) else self._latency)

    def _next(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> ScriptItem:
        with self._lock:
            self.calls += 1
            if callable(self._script):
                return self._script(messages, tools)
            if self._cursor >= len(self._script):
                raise RuntimeError("scripted LLM has no turn left")
            item = self._script[self._cursor]
            self._cursor += 1
            return item

    def _respond(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> LLMResponse:
        item = self._next(messages, tools)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, LLMResponse):
            return item
        tools_text = json.dumps(list(tools)) if tools else ""
        input_tokens = estimate_messages(messages) + (estimate_tokens(tools_text) if tools else 0)
        read, write = self._cached(tools_text, messages, input_tokens)
        if isinstance(item, str):
            return LLMResponse(item, [], input_tokens, max(1, estimate_tokens(item)), "stop", self.model, read, write)
        if isinstance(item, CallSpec):
            item = Turn((item,))
        if not isinstance(item, Turn):
            raise TypeError(f"unsupported script item {item!r}")
        calls = [ToolCall(f"call_{next(self._ids)}", c.name, c.arguments) for c in item.calls]
        output = sum(estimate_tokens(c.name) + estimate_tokens(c.arguments) + 3 for c in calls)
        output += estimate_tokens(item.content or "")
        return LLMResponse(item.content, calls, input_tokens, output, "tool_calls", self.model, read, write)

    def _cached(
        self, tools_text: str, messages: Sequence[dict[str, Any]], input_tokens: int
    ) -> tuple[int | None, int | None]:
        """Cached and cache-write input tokens of this request (the provider's prompt cache)."""
        if self.cache is None:
            return None, None
        with self._lock:
            previous, self._previous = self._previous, (tools_text, [dict(m) for m in messages])
        shared = 0  # tokens of the prefix this request shares with the previous one (tools come first)
        whole = False  # the previous prompt is all of it
        if previous is not None and previous[0] == tools_text:
            before = previous[1]
            common = 0
            while common < min(len(before), len(messages)) and before[common] == messages[common]:
                common += 1
            shared = estimate_messages(messages[:common]) + (estimate_tokens(tools_text) if tools_text else 0)
            whole = common == len(before)
        if input_tokens < MIN_CACHED_PROMPT:
            return (0, None) if self.cache == "openai" else (0, 0)
        if self.cache == "openai":
            return (shared // 128 * 128 if shared >= MIN_CACHED_PROMPT else 0), None
        read = shared if whole and shared >= MIN_CACHED_PROMPT else 0
        return read, input_tokens - read

    def complete(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> LLMResponse:
        """Blocking turn (sleeps ``latency``)."""
        delay = self._delay()
        if delay > 0:
            time.sleep(delay)
        return self._respond(messages, tools)

    async def acomplete(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> LLMResponse:
        """Async turn (awaits ``latency``)."""
        delay = self._delay()
        if delay > 0:
            await asyncio.sleep(delay)
        return self._respond(messages, tools)
