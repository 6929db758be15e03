"""Admission control on a real collector process: with a small in-flight budget, concurrent
exporters get 503 + Retry-After (UNAVAILABLE + RetryInfo over gRPC) instead of queueing,
/healthz stays fast meanwhile, and after retries every span is stored exactly once."""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter

import grpc
import httpx
import pytest
from google.rpc.error_details_pb2 import RetryInfo
from spans import make_run, request_of, span_counts

from loopsight.collector.admission import Admission

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
HTTP_SENDERS, GRPC_SENDERS, REQUESTS_EACH, RUNS_PER_REQUEST = 6, 2, 5, 40


def _body() -> tuple[bytes, int]:
    spans = [span for _ in range(RUNS_PER_REQUEST) for span in make_run(2)]
    return request_of(spans).SerializeToString(), len(spans)


@pytest.mark.timeout(60)
def test_small_budget_refuses_with_503_and_loses_nothing(start_collector):
    collector = start_collector(env={"LOOPSIGHT_MAX_INFLIGHT_REQUESTS": "2", "LOOPSIGHT_MAX_INFLIGHT_BYTES": "8000000"})
    outcomes: Counter[str] = Counter()
    sent = Counter[str]()
    lock = threading.Lock()
    deadline = time.monotonic() + 40
    done = threading.Event()
    errors: list[str] = []

    def http_sender() -> None:
        with httpx.Client(timeout=20) as client:
            for _ in range(REQUESTS_EACH):
                body, n = _body()
                while time.monotonic() < deadline:
                    response = client.post(
                        collector.traces_url, content=body, headers={"Content-Type": "application/x-protobuf"}
                    )
                    with lock:
                        outcomes[f"http {response.status_code}"] += 1
                    if response.status_code == 200:
                        with lock:
                            sent["spans"] += n
                        break
                    if response.status_code != 503 or not response.headers.get("Retry-After", "").isdigit():
                        errors.append(f"{response.status_code} {response.headers} {response.text[:200]}")
                        return
                    time.sleep(0.05)  # the test does not wait the full Retry-After

    def grpc_sender() -> None:
        with grpc.insecure_channel(collector.grpc_target) as channel:
            export = channel.unary_unary(EXPORT)
            for _ in range(REQUESTS_EACH):
                body, n = _body()
                while time.monotonic() < deadline:
                    try:
                        export(body, timeout=20)
                    except grpc.RpcError as exc:
                        with lock:
                            outcomes[f"grpc {exc.code().name}"] += 1
                        trailers = dict(exc.trailing_metadata() or ())
                        if exc.code() != grpc.StatusCode.UNAVAILABLE or "google.rpc.retryinfo-bin" not in trailers:
                            errors.append(f"{exc.code()} {exc.details()}")
                            return
                        assert RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"]).retry_delay.seconds >= 1
                        time.sleep(0.05)
                        continue
                    with lock:
                        outcomes["grpc OK"] += 1
                        sent["spans"] += n
                    break

    health_times: list[float] = []

    def health_poller() -> None:
        with httpx.Client(timeout=10) as client:
            while not done.is_set():
                t0 = time.perf_counter()
                assert client.get(f"{collector.url}/healthz").status_code == 200
                health_times.append(time.perf_counter() - t0)
                time.sleep(0.02)

    poller = threading.Thread(target=health_poller)
    poller.start()
    senders = [threading.Thread(target=http_sender) for _ in range(HTTP_SENDERS)]
    senders += [threading.Thread(target=grpc_sender) for _ in range(GRPC_SENDERS)]
    for thread in senders:
        thread.start()
    for thread in senders:
        thread.join()
    done.set()
    poller.join()

    assert not errors, errors
    requests = (HTTP_SENDERS + GRPC_SENDERS) * REQUESTS_EACH
    assert outcomes["http 200"] + outcomes["grpc OK"] == requests, outcomes
    assert outcomes["http 503"] > 0, outcomes
    metrics = httpx.get(f"{collector.url}/metrics").text
    assert "loopsight_overloaded_total" in metrics and "loopsight_inflight_requests 0" in metrics
    assert len(health_times) >= 5
    assert statistics.median(health_times) < 0.5, health_times
    assert max(health_times) < 3.0, health_times

    assert collector.stop() == 0
    total, distinct = span_counts(collector.db_path)
    assert total == distinct == sent["spans"] == requests * RUNS_PER_REQUEST * 4


def test_budget_admits_one_oversized_request_and_counts_bytes():
    budget = Admission(max_requests=4, max_bytes=100)
    big = budget.admit(1_000)  # alone: admitted even over the byte budget
    assert budget.try_admit(1) is None
    big.release()
    small = budget.admit(60)
    assert budget.try_admit(50) is None
    second = budget.admit(40)
    small.release()
    second.release()
    assert (budget.requests, budget.bytes, budget.refused) == (0, 0, 2)


def test_budget_from_env_rejects_bad_values():
    assert Admission.from_env({}).max_requests == 32
    assert Admission.from_env({"LOOPSIGHT_MAX_INFLIGHT_BYTES": "1000"}).max_bytes == 1000
    with pytest.raises(ValueError, match="LOOPSIGHT_MAX_INFLIGHT_REQUESTS"):
        Admission.from_env({"LOOPSIGHT_MAX_INFLIGHT_REQUESTS": "many"})
    with pytest.raises(ValueError, match="at least 1"):
        Admission.from_env({"LOOPSIGHT_MAX_INFLIGHT_REQUESTS": "0"})


def test_a_body_over_the_limit_is_413_even_while_the_budget_is_spent(store):
    """Checked before admission: a 503 would have the exporter retry a body that can never fit."""
    from starlette.testclient import TestClient

    from loopsight.collector.app import Settings, create_app

    budget = Admission(max_requests=1, max_bytes=1 << 20)
    app = create_app(store, Settings(max_body_bytes=1000, admission=budget))
    held = budget.admit(10)  # another request in flight
    try:
        with TestClient(app) as client:
            response = client.post(
                "/v1/traces", content=b"\x00" * 5000, headers={"Content-Type": "application/x-protobuf"}
            )
            assert response.status_code == 413, response.content
            small = request_of(make_run(1)).SerializeToString()
            assert len(small) < 1000
            refused = client.post("/v1/traces", content=small, headers={"Content-Type": "application/x-protobuf"})
            assert refused.status_code == 503
    finally:
        held.release()


def _tiny_spans(n: int) -> bytes:
    """A request of ``n`` spans with ids and times only (38 bytes each: a body far under 16 MiB)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    start = 1_700_000_000_000_000_000
    for i in range(n):
        scope.spans.add(
            trace_id=(i // 4 + 1).to_bytes(16, "big"),
            span_id=(i + 1).to_bytes(8, "big"),
            start_time_unix_nano=start + i,
            end_time_unix_nano=start + i + 1,
        )
    return request.SerializeToString()


@pytest.mark.timeout(240)
def test_a_request_of_more_spans_than_one_may_hold_is_refused_whole_and_ingest_splits_it(start_collector, tmp_path):
    """70,000 spans of 38 bytes (2.7 MB) held ~1.6 KB each, gigabytes at the body cap: more than
    65,536 are 413 / INVALID_ARGUMENT (never retried: it can never fit), and `loopsight ingest`
    halves such a request until it fits."""
    import subprocess
    import sys

    collector = start_collector()
    body = _tiny_spans(70_000)
    response = httpx.post(
        collector.traces_url, content=body, headers={"Content-Type": "application/x-protobuf"}, timeout=60
    )
    assert response.status_code == 413, response.content[:300]
    assert b"request of 70000 spans is over the 65536-span limit" in response.content
    with grpc.insecure_channel(collector.grpc_target) as channel, pytest.raises(grpc.RpcError) as refused:
        channel.unary_unary(EXPORT)(body, timeout=60)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "65536-span limit" in refused.value.details()
    metrics = collector.metrics()
    assert metrics['loopsight_export_requests_total{transport="grpc",outcome="too_large"}'] == 1
    assert metrics['loopsight_export_requests_total{transport="http",outcome="too_large"}'] == 1

    path = tmp_path / "tiny.pb"
    path.write_bytes(body)
    done = subprocess.run(
        [sys.executable, "-m", "loopsight", "ingest", str(path), "--collector", collector.url],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert collector.stop() == 0
    total, distinct = span_counts(collector.db_path)
    assert total == distinct == 70_000, "every span once, from the halves"


def test_a_request_of_many_tiny_spans_is_charged_for_its_spans_not_its_few_bytes():
    budget = Admission(max_requests=4, max_bytes=1_000_000, expansion=6)
    other = budget.admit(1_000)
    ticket = budget.admit(38_000)  # 1,000 spans of 38 bytes: 228,000 bytes by the body
    assert ticket.resize(38_000, spans=1_000) and ticket.nbytes == 512_000, "at least 512 bytes a span"
    assert not ticket.resize(38_000, spans=2_000), "1,024,000 bytes do not fit beside the other request"
    assert ticket.resize(400_000, spans=1_000) is False and ticket.nbytes == 512_000
    other.release()
    ticket.release()
    assert (budget.requests, budget.bytes) == (0, 0)


@pytest.mark.timeout(120)
def test_a_refused_body_is_let_go_at_once_not_at_the_next_garbage_collection(start_collector):
    """A 400 or 413 raised in the decoding thread carried a traceback whose frames held the body and
    the decoded request in a cycle: each refused 15 MB body stayed resident until a full GC ran
    (+15 MB a request, ~100 MB for one decoded first; here +48 MB by the fourth before the fix)."""
    collector = start_collector()

    def resident() -> float:
        return collector.metrics()['loopsight_process_resident_bytes{kind="total"}'] / 2**20

    garbage = bytes(range(256)) * 60_000  # 15 MB that is no protobuf
    headers = {"Content-Type": "application/x-protobuf"}
    assert httpx.post(collector.traces_url, content=garbage, headers=headers, timeout=60).status_code == 400
    after_one = resident()
    grown = []
    for _ in range(5):
        assert httpx.post(collector.traces_url, content=garbage, headers=headers, timeout=60).status_code == 400
        grown.append(round(resident() - after_one))
    assert max(grown) < 25, f"MB more than after the first, after each refused body: {grown}"
