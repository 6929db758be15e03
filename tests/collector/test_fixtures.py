"""The shared fixtures work: a real collector subprocess and a real Store."""

from __future__ import annotations

import httpx
from spans import memory_tracer

from loopsight.ingest.pipeline import spans_to_request
from loopsight.stores import ingest_request


def _finished_spans(n: int = 3):
    with memory_tracer() as (tracer, exporter):
        with tracer.start_as_current_span("invoke_agent helper", attributes={"gen_ai.operation.name": "invoke_agent"}):
            for i in range(n - 1):
                with tracer.start_as_current_span(f"execute_tool t{i}", attributes={"gen_ai.tool.name": f"t{i}"}):
                    pass
        return exporter.get_finished_spans()


def test_ingest_request_commits_and_resolves_the_run(store):
    spans = _finished_spans(3)
    assert ingest_request(store, spans_to_request(spans)) == 3
    con = store.reader()
    rows = con.execute("SELECT span_type, run_id IS NOT NULL FROM spans ORDER BY span_type").fetchall()
    assert rows == [("agent", True), ("tool", True), ("tool", True)]


def test_collector_server_is_healthy_and_stops_on_sigterm(collector_server):
    response = httpx.get(collector_server.url + "/healthz")
    assert response.json() == {"status": "ok"}
    assert collector_server.stop() == 0
