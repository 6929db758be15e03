"""The model interface the loop talks to.

An LLM is any object with ``model`` (str) and ``complete(messages, tools) ->
LLMResponse``; an ``acomplete`` coroutine is used by ``arun`` when present (otherwise
``complete`` runs in a worker thread). ``messages`` and ``tools`` are in OpenAI
chat-completions format. Failures are raised as exceptions that
:func:`loopsight.classify` understands (e.g. ``TransientToolError`` for a 429).

Example:
    >>> r = LLMResponse(content=None, tool_calls=[ToolCall("c1", "search", '{"q": "x"}')])
    >>> r.assistant_message()["tool_calls"][0]["function"]["name"]
    'search'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass
class LLMResponse:
    """One model turn: text and/or tool calls, with token usage (``input_tokens`` includes the
    ``cache_read_tokens`` served from the provider's prompt cache and the ``cache_write_tokens``
    written to it; ``None``: the provider did not say, and the count adds nothing to the run's
    token budget)."""

    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    finish_reason: str = "stop"
    model: str | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None

    def assistant_message(self) -> dict[str, Any]:
        """The turn as an OpenAI assistant message for the transcript."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return msg


@runtime_checkable
class LLM(Protocol):
    """What ``ReactAgent`` needs from a model client."""

    model: str

    def complete(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> LLMResponse: ...
