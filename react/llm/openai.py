"""An OpenAI-compatible chat-completions adapter with tool calling, over httpx.

Works with any server that speaks ``POST {base_url}/chat/completions`` (OpenAI, vLLM,
llama.cpp, LiteLLM proxy, Ollama's OpenAI endpoint, ...). Streaming is off. HTTP
failures are raised as loopsight error classes so the loop can react: 408/429/5xx and
network errors are transient (with ``retry_after`` from the ``Retry-After`` header),
401/403 fatal, 400/422 invalid_argument, other 4xx permanent.

Example:
    >>> llm = OpenAIChat("gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key="k")
    >>> llm.url
    'http://127.0.0.1:9/v1/chat/completions'
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import Any

import httpx

from loopsight import FatalToolError, InvalidArgumentError, PermanentToolError, TransientToolError
from loopsight.react.llm.base import LLMResponse, ToolCall

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIChat:
    """Chat-completions client; ``base_url``/``api_key`` default to ``OPENAI_BASE_URL``/``OPENAI_API_KEY``."""

    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        temperature: float | None = None,
        extra_body: dict[str, Any] | None = None,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout = timeout
        self.temperature = temperature
        self.extra_body = dict(extra_body or {})
        self._transport = transport
        self._async_transport = async_transport

    @property
    def url(self) -> str:
        """The chat-completions endpoint."""
        return f"{self.base_url}/chat/completions"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _body(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages), "stream": False}
        if tools:
            body["tools"] = list(tools)
            body["tool_choice"] = "auto"
        if self.temperature is not None:
            body["temperature"] = self.temperature
        body.update(self.extra_body)
        return body

    def complete(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> LLMResponse:
        """One blocking chat-completions request."""
        try:
            with httpx.Client(timeout=self.timeout, transport=self._transport) as client:
                response = client.post(self.url, headers=self._headers(), json=self._body(messages, tools))
        except httpx.TimeoutException as exc:
            raise TransientToolError(f"model request timed out: {exc}", error_type="timeout") from exc
        except httpx.TransportError as exc:
            raise TransientToolError(f"model endpoint unreachable: {exc}", error_type="connection") from exc
        return parse_response(response, self.model)

    async def acomplete(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> LLMResponse:
        """One async chat-completions request."""
        try:
            async with httpx.AsyncClient(timeout=self.timeout, transport=self._async_transport) as client:
                response = await client.post(self.url, headers=self._headers(), json=self._body(messages, tools))
        except httpx.TimeoutException as exc:
            raise TransientToolError(f"model request timed out: {exc}", error_type="timeout") from exc
        except httpx.TransportError as exc:
            raise TransientToolError(f"model endpoint unreachable: {exc}", error_type="connection") from exc
        return parse_response(response, self.model)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return max(seconds, 0.0) if seconds is not None and math.isfinite(seconds) else None


def raise_for_status(response: httpx.Response) -> None:
    """Raise the loopsight error class matching a non-2xx response."""
    status = response.status_code
    if status < 400:
        return
    detail = response.text[:300]
    try:
        err = response.json().get("error")
        if isinstance(err, dict) and err.get("message"):
            detail = str(err["message"])[:300]
    except (ValueError, AttributeError):
        pass
    message = f"HTTP {status} from {response.request.url}: {detail}"
    if status in (408, 409, 425, 429) or status >= 500:
        raise TransientToolError(message, error_type=str(status), retry_after=_retry_after(response))
    if status in (401, 403):
        raise FatalToolError(message, error_type=str(status))
    if status in (400, 422):
        raise InvalidArgumentError(message, error_type=str(status))
    raise PermanentToolError(message, error_type=str(status))


def parse_response(response: httpx.Response, model: str) -> LLMResponse:
    """Turn a chat-completions HTTP response into an :class:`LLMResponse`."""
    raise_for_status(response)
    try:
        data = response.json()
        choice = data["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise TransientToolError(f"malformed chat-completions response: {exc!r}", error_type="bad_response") from exc
    calls = []
    for i, tc in enumerate(message.get("tool_calls") or []):
        fn = tc.get("function") or {}
        args = fn.get("arguments", "")
        calls.append(
            ToolCall(
                tc.get("id") or f"call_{i}", fn.get("name", ""), args if isinstance(args, str) else json.dumps(args)
            )
        )
    usage = data.get("usage") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    return LLMResponse(
        content=message.get("content"),
        tool_calls=calls,
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
        finish_reason=choice.get("finish_reason") or ("tool_calls" if calls else "stop"),
        model=data.get("model") or model,
        cache_read_tokens=int(cached) if isinstance(cached, int) else None,
    )
