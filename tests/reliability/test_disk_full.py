"""A full disk under the DB file: 503 + Retry-After, a clear log line, no corruption, and
ingest resumes once space is freed (no restart)."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
from reliability_support import stored
from spans import request_of, tool_span


def _fill(directory: Path) -> Path:
    filler = directory / "filler.bin"
    block = b"\xa5" * (64 * 1024)
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(block)
                handle.flush()
        except OSError:
            pass
    return filler


def _batch(index: int, n: int = 500) -> bytes:
    trace = index.to_bytes(16, "big")
    attrs = {"gen_ai.tool.call.arguments": "x" * 100, "padding": os.urandom(300).hex()}
    spans = [
        tool_span(trace, (index * 100_000 + i + 1).to_bytes(8, "big"), 1_700_000_000_000_000_000 + i, attrs)
        for i in range(n)
    ]
    return request_of(spans).SerializeToString()


def test_full_disk_answers_503_and_resumes(start_collector, mounted) -> None:
    directory = mounted("db", "8m")
    server = start_collector(db_path=directory / "loopsight.duckdb")
    headers = {"Content-Type": "application/x-protobuf"}
    acked: set[int] = set()
    with httpx.Client(timeout=60) as client:
        assert client.post(server.traces_url, content=_batch(1), headers=headers).status_code == 200
        acked.add(1)
        filler = _fill(directory)

        statuses = []
        for index in range(2, 12):
            answer = client.post(server.traces_url, content=_batch(index), headers=headers)
            statuses.append(answer.status_code)
            if answer.status_code == 200:
                acked.add(index)
            else:
                assert answer.status_code == 503, answer.text
                assert int(answer.headers["Retry-After"]) >= 1
                assert "space" in answer.text.lower() or "disk" in answer.text.lower(), answer.text
        assert 503 in statuses, f"a full disk was never reported: {statuses}"
        assert server.process.poll() is None, server.log()
        log = server.log().lower()
        assert "no space" in log or "disk" in log, server.log()[-2000:]

        filler.unlink()
        resumed = [client.post(server.traces_url, content=_batch(index), headers=headers) for index in range(20, 23)]
        assert [a.status_code for a in resumed] == [200, 200, 200], [a.text[:200] for a in resumed]
        acked.update(range(20, 23))
        assert client.get(f"{server.url}/healthz").status_code == 200
    assert server.stop() == 0, server.log()[-3000:]
    assert "Traceback" not in server.log()

    traces = {int(row[0], 16) for row in stored(server.db_path, 'SELECT DISTINCT "TraceId" FROM spans')}
    assert acked <= traces, f"acknowledged batches missing after the full disk: {sorted(acked - traces)}"
    counts = stored(server.db_path, 'SELECT count(*), count(DISTINCT "SpanId") FROM spans')[0]
    assert counts[0] == counts[1] == 500 * len(traces)
