"""The OpenAI-compatible adapter against a fake chat-completions server on loopback."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from ports import free_port

import loopsight
from loopsight import react
from loopsight.react.llm import OpenAIChat
from loopsight.react.retry import RetryPolicy

Reply = tuple[int, dict[str, Any], dict[str, str]]


class FakeOpenAI:
    """Records requests; answers each with the next scripted (status, body, headers)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.replies: list[Reply | Callable[[dict[str, Any]], Reply]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                reply = fake.replies.pop(0)
                status, payload, headers = reply(body) if callable(reply) else reply
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def completion(message: dict[str, Any], finish: str, prompt: int = 50, completion_tokens: int = 10) -> Reply:
    return (
        200,
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens},
        },
        {},
    )


def tool_call_reply(name: str, args: dict[str, Any]) -> Reply:
    return completion(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_abc", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            ],
        },
        "tool_calls",
    )


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    yield server
    server.close()


def order_tool() -> react.Tool:
    return react.Tool(
        "query_order",
        lambda order_id: {"order_id": order_id, "status": "shipped"},
        "Look an order up.",
        {"type": "object", "required": ["order_id"], "properties": {"order_id": {"type": "string"}}},
    )


def test_tool_calling_round_trip_through_the_fake_server(fake, loopsight_spans):
    fake.replies = [
        tool_call_reply("query_order", {"order_id": "100234"}),
        completion({"role": "assistant", "content": "Order 100234 has shipped."}, "stop", 80, 12),
    ]
    llm = OpenAIChat("gpt-4o-mini", base_url=fake.base_url, api_key="sk-test")
    result = react.ReactAgent(llm, [order_tool()], react.ReactConfig()).run("Where is 100234?")
    assert result.termination_reason == "completed" and result.answer == "Order 100234 has shipped."
    first, second = fake.requests
    assert first["path"] == "/v1/chat/completions"
    assert first["headers"]["Authorization"] == "Bearer sk-test"
    assert first["body"]["stream"] is False and first["body"]["model"] == "gpt-4o-mini"
    assert first["body"]["tools"][0]["function"]["name"] == "query_order"
    tool_msg = second["body"]["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == "call_abc"
    assert json.loads(tool_msg["content"]) == {"order_id": "100234", "status": "shipped"}
    assert second["body"]["messages"][-2]["tool_calls"][0]["function"]["name"] == "query_order"
    chats = loopsight_spans.by_name("chat gpt-4o-mini")
    assert [c.attributes["gen_ai.usage.input_tokens"] for c in chats] == [50, 80]
    assert chats[0].attributes["gen_ai.provider.name"] == "openai"
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert result.summary.input_tokens == 130 and result.summary.output_tokens == 22


def test_rate_limit_is_retried_honouring_retry_after(fake, loopsight_spans):
    fake.replies = [
        (429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "0.05"}),
        completion({"role": "assistant", "content": "hi"}, "stop"),
    ]
    llm = OpenAIChat("gpt-4o-mini", base_url=fake.base_url, api_key="k")
    result = react.ReactAgent(llm, [], react.ReactConfig(retry=RetryPolicy(base=0.001, cap=0.002))).run("hi")
    assert result.termination_reason == "completed" and len(fake.requests) == 2
    failed, ok = loopsight_spans.by_name("chat")
    assert failed.attributes["error.type"] == "429" and failed.attributes["loopsight.error.class"] == "transient"
    assert ok.status.is_ok and failed.attributes["loopsight.step"] == ok.attributes["loopsight.step"] == 0


def test_unauthorised_is_fatal(fake, loopsight_spans):
    fake.replies = [(401, {"error": {"message": "Incorrect API key"}}, {})]
    result = react.ReactAgent(OpenAIChat("m", base_url=fake.base_url, api_key="bad"), []).run("hi")
    assert (result.termination_reason, result.fallback) == ("fatal_error", "permission")
    assert loopsight_spans.by_name("chat")[0].attributes["loopsight.error.class"] == "fatal"


def test_status_mapping_and_async_client(fake):
    fake.replies = [
        (400, {"error": {"message": "bad tools"}}, {}),
        (404, {}, {}),
        (503, {}, {"Retry-After": "2"}),
        (200, {"choices": []}, {}),
        completion({"role": "assistant", "content": "async ok"}, "stop"),
    ]
    llm = OpenAIChat("m", base_url=fake.base_url, api_key="k")
    expected = [("400", "invalid_argument"), ("404", "permanent"), ("503", "transient"), ("bad_response", "transient")]
    for etype, eclass in expected:
        with pytest.raises(loopsight.ToolError) as info:
            llm.complete([{"role": "user", "content": "x"}], [])
        assert loopsight.classify(info.value) == (etype, eclass)
        if etype == "503":
            assert info.value.retry_after == 2.0
    response = asyncio.run(llm.acomplete([{"role": "user", "content": "x"}], []))
    assert response.content == "async ok" and response.input_tokens == 50


def test_unreachable_endpoint_is_transient_and_the_run_returns(loopsight_spans, monkeypatch):
    port = free_port()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    llm = OpenAIChat("m", timeout=1.0)
    assert llm.base_url.endswith(f":{port}/v1") and llm.api_key == "from-env"
    config = react.ReactConfig(llm_max_retries=1, retry=RetryPolicy(base=0.001, cap=0.002))
    result = react.ReactAgent(llm, [], config).run("hi")
    assert result.termination_reason == "error" and result.fallback == "retry_later"
    assert all(c.attributes["error.type"] == "connection" for c in loopsight_spans.by_name("chat"))
