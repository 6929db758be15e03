"""A scripted OpenAI-compatible model server (stdlib only).

``POST /v1/chat/completions`` (also under any prefix, e.g. ``/openai/v1/...``), plain or
``stream: true`` (SSE, with a last usage chunk when ``stream_options.include_usage``). The last
``[ls:<scenario>:<key>]`` tag in the conversation picks the scenario script; the number of
requests already served for that key is the turn. Usage is deterministic per turn:
prompt = 120 + 45·turn, completion = 18 + turn, cached = 64·turn.

``GET /log`` (``?key=K``) returns every request served, in order — the ground truth for steps and
tokens — and ``POST /reset`` (``{"prefix": P}``) forgets the turn counters of keys starting with P.

    python -m recorder.model_server --port 8765
"""

from __future__ import annotations

import argparse
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

try:
    from recorder.scenarios import RESPONSE_MODEL, SCENARIOS, TAG, Call
except ImportError:  # run as a script from recorder/
    from scenarios import RESPONSE_MODEL, SCENARIOS, TAG, Call  # type: ignore[no-redef]


def usage_for(turn: int) -> dict[str, Any]:
    prompt, completion = 120 + 45 * turn, 18 + turn
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 64 * turn, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p.get("text", "") for p in content if isinstance(p, dict)]
    return []


def find_tag(messages: list[dict[str, Any]]) -> tuple[str, str] | None:
    """(scenario, key) of the last tag in the conversation's user (or system) messages."""
    found = None
    for message in messages:
        if message.get("role") in ("user", "system", "developer", "human"):
            for text in _texts(message):
                for match in TAG.finditer(text or ""):
                    found = (match.group(1), match.group(2))
    return found


class ModelState:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.turns: dict[str, int] = {}
        self.log: list[dict[str, Any]] = []

    def answer(self, body: dict[str, Any], path: str) -> dict[str, Any]:
        """Decide this request's turn and reply; log it."""
        tag = find_tag(body.get("messages") or [])
        with self.lock:
            key = f"{tag[0]}:{tag[1]}" if tag else None
            turn = self.turns.get(key, 0) if key else 0
            if key:
                self.turns[key] = turn + 1
            scenario = SCENARIOS.get(tag[0]) if tag else None
            offered = {(t.get("function") or t).get("name") for t in body.get("tools") or []}
            calls = scenario.calls_for_turn(turn) if scenario and offered else ()  # no tools offered: answer
            answer = (scenario.answer or "I could not finish the task.") if scenario else "OK."
            if not calls and "final_answer" in offered:  # smolagents answers through its final_answer tool
                calls = (Call("final_answer", {"answer": answer}),)
            digest = hashlib.sha256(f"{key}:{turn}".encode()).hexdigest()[:12]
            tool_calls = [
                {
                    "id": f"call_{digest}_{i}",
                    "type": "function",
                    "function": {"name": c.tool, "arguments": json.dumps(c.args)},
                }
                for i, c in enumerate(calls)
            ]
            content = None if calls else answer
            reply = {
                "id": f"chatcmpl-{digest}",
                "tool_calls": tool_calls,
                "content": content,
                "finish_reason": "tool_calls" if calls else "stop",
                "usage": usage_for(turn),
            }
            self.log.append(
                {
                    "seq": len(self.log),
                    "path": path,
                    "key": key,
                    "scenario": tag[0] if tag else None,
                    "turn": turn,
                    "stream": bool(body.get("stream")),
                    "request_model": body.get("model"),
                    # a stream without stream_options.include_usage gets no usage at all
                    "usage_returned": not body.get("stream")
                    or bool((body.get("stream_options") or {}).get("include_usage")),
                    "messages": len(body.get("messages") or []),
                    "tools_offered": len(body.get("tools") or []),
                    "usage": reply["usage"],
                    "tool_calls": [{"name": c.tool, "arguments": c.args} for c in calls],
                    "final": content,
                }
            )
            return reply

    def reset(self, prefix: str) -> None:
        with self.lock:
            for key in [k for k in self.turns if k.split(":", 1)[-1].startswith(prefix)]:
                del self.turns[key]


def completion_json(reply: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply["content"], "refusal": None}
    if reply["tool_calls"]:
        message["tool_calls"] = reply["tool_calls"]
    return {
        "id": reply["id"],
        "object": "chat.completion",
        "created": 1_764_000_000,
        "model": RESPONSE_MODEL,
        "system_fingerprint": "fp_recorder",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reply["finish_reason"]}],
        "usage": reply["usage"],
    }


def completion_chunks(reply: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    base = {
        "id": reply["id"],
        "object": "chat.completion.chunk",
        "created": 1_764_000_000,
        "model": RESPONSE_MODEL,
        "system_fingerprint": "fp_recorder",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": "" if reply["tool_calls"] else None})]
    if reply["content"]:
        words = reply["content"].split(" ")
        chunks += [chunk({"content": w if i == 0 else " " + w}) for i, w in enumerate(words)]
    for i, call in enumerate(reply["tool_calls"]):
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["function"]["name"], "arguments": ""},
                        }
                    ]
                }
            )
        )
        chunks.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": call["function"]["arguments"]}}]}))
    chunks.append(chunk({}, reply["finish_reason"]))
    if include_usage:
        chunks.append({**base, "choices": [], "usage": reply["usage"]})
    return chunks


def make_handler(state: ModelState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlparse(self.path)
            if url.path.endswith("/log"):
                key = parse_qs(url.query).get("key", [None])[0]
                with state.lock:
                    entries = [e for e in state.log if key is None or e["key"] == key]
                self._json(200, {"requests": entries})
            elif url.path.endswith("/models"):
                self._json(200, {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model"}]})
            else:
                self._json(404, {"error": {"message": f"no route {url.path}"}})

        def do_POST(self) -> None:
            url = urlparse(self.path)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if url.path.endswith("/reset"):
                state.reset(body.get("prefix", ""))
                self._json(200, {"ok": True})
                return
            if not url.path.endswith("/chat/completions"):
                self._json(404, {"error": {"message": f"no route {url.path}", "type": "invalid_request_error"}})
                return
            reply = state.answer(body, url.path)
            if not body.get("stream"):
                self._json(200, completion_json(reply))
                return
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for chunk in completion_chunks(reply, include_usage):
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

    return Handler


def serve(port: int = 0, host: str = "127.0.0.1") -> tuple[ThreadingHTTPServer, ModelState]:
    """Start the server in a daemon thread; ``server.server_address[1]`` is the port."""
    state = ModelState()
    server = ThreadingHTTPServer((host, port), make_handler(state))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    server, _ = serve(args.port)
    print(f"model server on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
