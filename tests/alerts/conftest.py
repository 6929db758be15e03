"""Alert test fixtures: fixture traffic through the real ingest path, a real webhook receiver."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from alerts_traffic import Hook, Traffic

from loopsight.stores.duckdb_store import Store


@pytest.fixture
def hook() -> Iterator[Hook]:
    state: dict[str, Hook] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            h = state["hook"]
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            with h.lock:
                h.attempts += 1
                status, delay = h.script.pop(0) if h.script else (200, 0.0)
            if delay:
                time.sleep(delay)
            if status == 200:
                with h.lock:
                    h.received.append(json.loads(body))
            try:
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            except OSError:
                pass  # the client gave up (timeout test)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state["hook"] = Hook(f"http://127.0.0.1:{server.server_address[1]}/hook")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state["hook"]
    server.shutdown()
    server.server_close()


@pytest.fixture
def traffic(store: Store) -> Traffic:
    return Traffic(store)
