"""The ``--forward-to`` upstream and the alert webhooks hanging, failing or down: ingest
latency does not notice, the queues stay bounded, and retries deliver once the upstream heals."""

from __future__ import annotations

import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Status
from ports import free_port
from spans import request_of, tool_span

RULES = """
[[rules]]
name = "search-failing"
metric = "tool_fail_rate"
tool = "search"
window = "10m"
threshold = 0.1
min_samples = 1
notify = ["webhook:{url}"]
"""


class Upstream:
    """An OTLP/HTTP upstream and webhook receiver on loopback that can hang, fail or serve."""

    def __init__(self) -> None:
        self.mode = "hang"
        self.hang_seconds = 3.0
        self.spans: set[bytes] = set()
        self.hits = {"traces": 0, "hook": 0}
        self.lock = threading.Lock()
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                kind = "traces" if self.path.startswith("/v1/traces") else "hook"
                with upstream.lock:
                    upstream.hits[kind] += 1
                if upstream.mode == "hang":
                    time.sleep(upstream.hang_seconds)
                    self.send_response(503)
                    self.send_header("Retry-After", "1")
                    self.end_headers()
                    return
                if kind == "traces":
                    request = ExportTraceServiceRequest.FromString(body)
                    with upstream.lock:
                        upstream.spans.update(
                            s.span_id for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans
                        )
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _send(server, batches: int, per_batch: int = 100) -> tuple[list[float], set[bytes]]:
    """Post ``batches`` requests of failing/ok search tool spans; returns latencies and span ids."""
    latencies, ids = [], set()
    now = time.time_ns()
    with httpx.Client(timeout=60) as client:
        for b in range(batches):
            spans = []
            for i in range(per_batch):
                sid = ((now // 1000 + b * per_batch + i) % 2**63 or 1).to_bytes(8, "big")
                span = tool_span(now.to_bytes(16, "big"), sid, now - 10**9 + i)
                if i % 2:
                    span.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message="timeout"))
                spans.append(span)
                ids.add(sid)
            body = request_of(spans).SerializeToString()
            started = time.perf_counter()
            answer = client.post(server.traces_url, content=body, headers={"Content-Type": "application/x-protobuf"})
            latencies.append(time.perf_counter() - started)
            assert answer.status_code == 200, answer.text
    return latencies, ids


def _metric(server, name: str) -> float:
    text = httpx.get(f"{server.url}/metrics", timeout=30).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def test_hanging_upstream_and_webhook_do_not_slow_ingest_and_retries_deliver(start_collector, tmp_path: Path) -> None:
    upstream = Upstream()
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES.format(url=f"{upstream.url}/hook"))
    try:
        server = start_collector("--forward-to", upstream.url, "--rules", str(rules), "--alert-interval", "0.5")
        latencies, ids = _send(server, 40)
        deadline = time.monotonic() + 20
        while upstream.hits["hook"] == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert upstream.hits["traces"] >= 1 and upstream.hits["hook"] >= 1, upstream.hits
        more, more_ids = _send(server, 10)  # while the webhook hangs too
        latencies += more
        ids |= more_ids
        p50, p95 = statistics.median(latencies), statistics.quantiles(latencies, n=20)[-1]
        assert p50 < 0.5 and p95 < upstream.hang_seconds / 2, (p50, p95)
        assert _metric(server, "loopsight_forward_queue_batches") <= 1000

        upstream.mode = "ok"  # the upstream heals: retries deliver everything, each span once
        deadline = time.monotonic() + 60
        while upstream.spans != ids and time.monotonic() < deadline:
            time.sleep(0.2)
        assert upstream.spans == ids, f"{len(ids - upstream.spans)} spans never reached the upstream"
        assert _metric(server, "loopsight_forward_retries_total") >= 1
        assert server.stop() == 0, server.log()[-3000:]
        assert "Traceback" not in server.log()
    finally:
        upstream.close()


def test_upstream_down_does_not_slow_ingest(start_collector) -> None:
    server = start_collector("--forward-to", f"http://127.0.0.1:{free_port()}")
    latencies, _ = _send(server, 30)
    assert statistics.median(latencies) < 0.5, latencies
    deadline = time.monotonic() + 10
    while _metric(server, "loopsight_forward_retries_total") < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _metric(server, "loopsight_forward_retries_total") >= 1
    assert server.process.poll() is None
    assert server.stop() == 0
