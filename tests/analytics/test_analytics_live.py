"""End to end: OTel SDK exporter -> the collector app under a real uvicorn server on loopback -> the query API."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from analytics_fixture import Recorder
from analytics_world import record_world
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from loopsight.collector.app import Settings, create_app
from loopsight.stores.duckdb_store import Store

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def collector_url(tmp_path: Path) -> Iterator[str]:
    """The collector's app (real Store on a DuckDB file) served by uvicorn on a free loopback port."""
    store = Store.open(str(tmp_path / "live.duckdb"))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(store, Settings(token=TOKEN)), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
    store.close()


def test_query_api_over_a_running_collector(collector_url: str) -> None:
    recorder = Recorder()
    runs = record_world(recorder)
    exporter = OTLPSpanExporter(endpoint=f"{collector_url}/v1/traces", headers=AUTH, timeout=10)
    assert exporter.export(recorder.exporter.get_finished_spans()) == SpanExportResult.SUCCESS
    exporter.shutdown()

    with httpx.Client(base_url=collector_url, headers=AUTH, timeout=10) as client:
        window = {"since": "2026-01-11T00:00:00Z", "until": "2026-01-12T00:00:00Z"}
        found = client.get("/api/v1/runs", params={"tool": "search", "min_tokens": 496, "agent": "orders"}).json()[
            "runs"
        ]
        assert [run["run_id"] for run in found] == [runs["O1"].run_id, runs["R1"].run_id]
        tools = client.get("/api/v1/tools", params=window).json()["tools"]
        assert [(t["tool"], t["calls"], t["errors"]) for t in tools] == [
            ("search", 5, 0),
            ("refund", 3, 2),
            ("lookup", 1, 1),
        ]
        tiles = client.get("/api/v1/overview", params=window).json()["tiles"]
        assert (tiles["runs"]["value"], tiles["success_rate"]["value"], tiles["tokens_per_success"]["value"]) == (
            5,
            0.4,
            1150.0,
        )
        reasons = client.get("/api/v1/terminations", params={**window, "bucket": 86400}).json()["totals"]
        assert [(t["termination_reason"], t["runs"]) for t in reasons] == [
            ("completed", 3),
            ("loop_detected", 1),
            ("max_steps", 1),
        ]
        detail = client.get(f"/api/v1/runs/{runs['R1'].trace_id}").json()
        assert [s["tool_errors"] for s in detail["steps"]] == [0, 1, 0, 0]
        assert client.get("/api/v1/overview", params={"since": "nope"}).status_code == 400

    for path in ("/api/v1/tools", "/api/v1/overview", "/api/v1/terminations"):
        assert httpx.get(collector_url + path, timeout=10).status_code == 401
