"""The collector's memory budget (``--memory-budget``) on a real process: a budget too small to
run in is refused at start-up with a clear message; a valid one is split between DuckDB and the
requests in flight (shown in ``/metrics``); and gzip bodies that only turn out large once
decompressed are charged at their decoded size, so over budget they get 503 + ``Retry-After``
and, retried, are all stored exactly once. RSS figures under load are in bench/soak.py and
docs/reliability.md, not here."""

from __future__ import annotations

import gzip
import os
import re
import threading
from collections import Counter

import httpx
import pytest
from spans import request_of, span_counts, tool_span

MIB = 2**20
SENDERS, REQUESTS_EACH, SPANS_PER_REQUEST = 6, 2, 2_000
INFLIGHT = 12 * MIB


def _gzip_body() -> tuple[bytes, int]:
    """About 1.3 MiB of protobuf that gzips to a few dozen KiB (one long repeated attribute)."""
    trace = os.urandom(16)
    filler = "x" * 512
    spans = [
        tool_span(trace, os.urandom(8), 1_700_000_000_000_000_000 + i, {"filler": filler})
        for i in range(SPANS_PER_REQUEST)
    ]
    return gzip.compress(request_of(spans).SerializeToString()), len(spans)


@pytest.mark.parametrize(
    "budget, message",
    [
        ("100MB", "272 MiB for itself, 96 MiB for DuckDB and 32 MiB for requests in flight (at least 400MB"),
        ("lots", "not a size"),
    ],
)
@pytest.mark.timeout(60)
def test_unusable_budget_is_a_clear_startup_error(start_collector, budget, message):
    collector = start_collector("--memory-budget", budget, wait=False)
    assert collector.process.wait(timeout=45) == 2
    log = " ".join(collector.log().split())  # the CLI wraps long lines
    assert "error:" in log and message in log and "memory-budget" in log, log
    assert "Traceback" not in log, log


@pytest.mark.timeout(120)
def test_budget_is_split_and_decompressed_bodies_are_charged(start_collector):
    # 12 MiB in flight: one request's decompressed charge (~7.7 MiB: 1.3 MiB x 6) fits, two do not,
    # so any two requests decoded at once meet the decompressed check (with 24 MiB it took four at
    # once, which a fast machine may never hold: a flaky assertion on CI)
    collector = start_collector("--memory-budget", "512MB", env={"LOOPSIGHT_MAX_INFLIGHT_BYTES": str(INFLIGHT)})
    metrics = httpx.get(f"{collector.url}/metrics").text
    parts = dict(re.findall(r'loopsight_memory_budget_bytes\{part="(\w+)"\} (\d+)', metrics))
    assert int(parts["total"]) == 512 * MIB
    assert int(parts["duckdb"]) + int(parts["inflight"]) == (512 - 272) * MIB, parts
    assert 'loopsight_duckdb_memory_bytes{tag="' in metrics

    body, spans_each = _gzip_body()
    headers = {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}
    outcomes: Counter[str] = Counter()
    stored_spans = Counter[str]()
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(SENDERS)

    def sender() -> None:
        with httpx.Client(timeout=60) as client:
            start.wait()
            for _ in range(REQUESTS_EACH):
                fresh, n = _gzip_body()
                for _attempt in range(200):
                    response = client.post(collector.traces_url, content=fresh, headers=headers)
                    with lock:
                        outcomes[response.status_code] += 1
                    if response.status_code == 200:
                        with lock:
                            stored_spans["sent"] += n
                        break
                    if response.status_code != 503 or not response.headers.get("Retry-After", "").isdigit():
                        errors.append(f"{response.status_code} {response.text[:200]}")
                        return
                    if "decompressed" in response.text:
                        with lock:
                            outcomes["503 decompressed"] += 1
                    threading.Event().wait(0.05)  # the test does not wait the full Retry-After
                else:
                    errors.append("never admitted")

    assert len(body) * 6 < INFLIGHT // SENDERS  # every sender fits the budget by its declared size
    assert INFLIGHT // 2 < len(gzip.decompress(body)) * 6 < INFLIGHT  # one fits once decompressed, two do not
    threads = [threading.Thread(target=sender) for _ in range(SENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert not errors, errors
    assert outcomes[200] == SENDERS * REQUESTS_EACH, outcomes
    assert outcomes["503 decompressed"] > 0, outcomes
    assert "loopsight_inflight_bytes 0" in httpx.get(f"{collector.url}/metrics").text

    assert collector.stop() == 0
    total, distinct = span_counts(collector.db_path)
    assert total == distinct == stored_spans["sent"] == SENDERS * REQUESTS_EACH * spans_each
