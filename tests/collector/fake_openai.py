"""A loopback OpenAI Chat Completions server: a tool call first, then the answer."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import uvicorn
from ports import free_port
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


async def completions(request: Request) -> JSONResponse:
    body = await request.json()
    answered = any(m.get("role") == "tool" for m in body.get("messages", []))
    if answered:
        message = {"role": "assistant", "content": "Order A-1 has shipped."}
        finish, usage = "stop", {"prompt_tokens": 61, "completion_tokens": 9, "total_tokens": 70}
    else:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_order", "arguments": '{"order_id": "A-1"}'},
                }
            ],
        }
        finish, usage = "tool_calls", {"prompt_tokens": 42, "completion_tokens": 12, "total_tokens": 54}
    return JSONResponse(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "gpt-4o-mini"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }
    )


def serve_fake_openai() -> Iterator[str]:
    """Yield the base URL (``http://127.0.0.1:PORT/v1``) of a running fake server."""
    port = free_port()
    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}/v1"
    server.should_exit = True
    thread.join(10)
