"""``kill -9`` of the collector under load from the real OTel SDK (BatchSpanProcessor + OTLPSpanExporter).

What must hold: every span acknowledged before the kill is stored after the restart, and
with the exporter's own retries every span the SDK produced arrives exactly once (the
primary key (TraceId, SpanId) absorbs the retries of requests whose answer was lost).
The restarted process replays DuckDB's WAL within a bounded resident set.
"""

from __future__ import annotations

import threading
import time

import pytest
from reliability_support import rss_kib, sdk_client, stored

RSS_LIMIT_MB = 400


def _produce(client, stop: threading.Event, per_tick: int = 150, tick: float = 0.05) -> None:
    while not stop.is_set():
        client.emit(per_tick)
        time.sleep(tick)


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_kill9_under_sdk_load_loses_no_acknowledged_span_and_dedups_retries(start_collector, protocol: str) -> None:
    first = start_collector()
    client = sdk_client(first.url, timeout=60.0, grpc_target=first.grpc_target if protocol == "grpc" else None)
    stop = threading.Event()
    producer = threading.Thread(target=_produce, args=(client, stop), daemon=True)
    producer.start()
    try:
        deadline = time.monotonic() + 30
        while len(client.exporter.acked) < 2_000 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(client.exporter.acked) >= 2_000, f"collector acknowledged too little before the kill:\n{first.log()}"

        first.kill()
        with client.exporter.lock:
            acked_before_kill = set(client.exporter.acked)
        time.sleep(1.0)  # exporter keeps trying against a dead port meanwhile

        second = start_collector(db_path=first.db_path, http_port=first.http_port, grpc_port=first.grpc_port)
        replay_peak_mb = rss_kib(second.process.pid, "VmHWM") / 1024
        time.sleep(2.0)  # more load on the restarted collector
    finally:
        stop.set()
        producer.join(timeout=30)
    assert client.provider.force_flush(120_000), "the SDK could not flush in 120 s"
    client.provider.shutdown()
    peak_mb = rss_kib(second.process.pid, "VmHWM") / 1024
    assert second.stop() == 0, second.log()

    ids = [row[0] for row in stored(first.db_path)]
    stored_ids = set(ids)
    lost_acked = acked_before_kill - stored_ids
    assert not lost_acked, f"{len(lost_acked)} acknowledged spans missing after kill -9"
    assert not client.exporter.failed, f"{len(client.exporter.failed)} spans the exporter gave up on"
    assert client.exporter.acked == client.created
    assert len(ids) == len(stored_ids), f"{len(ids) - len(stored_ids)} duplicate rows"
    assert stored_ids == client.created, (
        f"sent {len(client.created)}, stored {len(stored_ids)}, missing {len(client.created - stored_ids)}"
    )

    # exactly once in the analytics too
    from loopsight.analytics import tool_stats
    from loopsight.stores import open_reader

    con = open_reader(first.db_path)
    try:
        stats = {row["tool"]: row for row in tool_stats(con)}
    finally:
        con.close()
    assert stats["search"]["calls"] == len(client.created)
    assert replay_peak_mb < RSS_LIMIT_MB and peak_mb < RSS_LIMIT_MB, (replay_peak_mb, peak_mb)
    print(
        f"kill -9 ({protocol}): {len(acked_before_kill)} acknowledged before the kill, {len(client.created)} sent, "
        f"{len(stored_ids)} stored, 0 lost, 0 duplicated; restarted collector peak RSS {peak_mb:.0f} MB"
    )
