"""An OTLP/HTTP capture endpoint (stdlib only): every ``POST .../v1/traces`` body is kept exactly
as received (bytes, content type, content encoding), in order, and answered 200 with an empty
ExportTraceServiceResponse (an empty protobuf message, or ``{}`` for JSON). Any path ending in
``/v1/traces`` is accepted, so the Langfuse SDK's ``/api/public/otel/v1/traces`` lands here too.

``GET /captured?since=N`` returns the requests from number N on (bodies base64), for the drivers.
"""

from __future__ import annotations

import argparse
import base64
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


@dataclass
class Captured:
    path: str
    content_type: str
    content_encoding: str | None
    body: bytes

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "content_type": self.content_type,
            "content_encoding": self.content_encoding,
            "body": base64.b64encode(self.body).decode(),
        }


class CaptureState:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[Captured] = []


def make_handler(state: CaptureState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, data: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlparse(self.path)
            if url.path != "/captured":
                self._send(404, b"{}", "application/json")
                return
            since = int(parse_qs(url.query).get("since", ["0"])[0])
            with state.lock:
                items = [r.to_json() for r in state.requests[since:]]
                total = len(state.requests)
            self._send(200, json.dumps({"total": total, "requests": items}).encode(), "application/json")

        def do_POST(self) -> None:
            path = urlparse(self.path).path
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not path.endswith("/v1/traces"):
                self._send(404, b"", "text/plain")
                return
            content_type = self.headers.get("Content-Type", "application/x-protobuf")
            with state.lock:
                state.requests.append(Captured(path, content_type, self.headers.get("Content-Encoding"), body))
            if "json" in content_type:
                self._send(200, b"{}", "application/json")
            else:
                self._send(200, b"", "application/x-protobuf")  # an empty ExportTraceServiceResponse

    return Handler


def serve(port: int = 0, host: str = "127.0.0.1") -> tuple[ThreadingHTTPServer, CaptureState]:
    state = CaptureState()
    server = ThreadingHTTPServer((host, port), make_handler(state))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=4399)
    server, _ = serve(parser.parse_args().port)
    print(f"capture on http://127.0.0.1:{server.server_address[1]}/v1/traces", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
