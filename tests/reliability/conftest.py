"""Fixtures of the reliability tests (helpers live in reliability_support.py): small tmpfs
mounts, and a collector started on a file that already holds seeded rows (with their checksum)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from reliability_support import rows_checksum, stored, umount
from spans import request_of, tool_span


@pytest.fixture
def mounted(tmp_path: Path):
    """Factory mounting small tmpfs filesystems under tmp_path; skips where mount is not permitted."""
    mounts: list[Path] = []

    def mount(name: str, size: str = "8m", options: str = "") -> Path:
        path = tmp_path / name
        path.mkdir(parents=True, exist_ok=True)
        opts = f"size={size}" + (f",{options}" if options else "")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN): {done.stderr.strip()}")
        mounts.append(path)
        return path

    yield mount
    for path in reversed(mounts):
        umount(path)


def seeded_spans() -> tuple[list, set[str]]:
    """Three small runs (a run span and four tool spans each); returns the spans and their ids."""
    spans = []
    ids: set[str] = set()
    for run in range(3):
        trace = os.urandom(16)
        root = os.urandom(8)
        t0 = 1_700_000_000_000_000_000 + run * 10**12
        for step in range(4):
            sid = os.urandom(8)
            span = tool_span(trace, sid, t0 + step * 10**9, {"loopsight.step": step})
            span.parent_span_id = root
            spans.append(span)
            ids.add(sid.hex())
        spans.append(
            tool_span(
                trace,
                root,
                t0,
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "seeded",
                    "loopsight.termination.reason": "completed",
                },
                name="invoke_agent seeded",
            )
        )
        ids.add(root.hex())
    return spans, ids


@pytest.fixture
def seeded_collector(start_collector, tmp_path):
    """A collector on a file already holding seeded rows; yields (server, ids, checksum before)."""
    from loopsight.stores import ingest_request
    from loopsight.stores.duckdb_store import Store

    db = tmp_path / "seeded.duckdb"
    spans, ids = seeded_spans()
    store = Store.open(str(db))
    try:
        assert ingest_request(store, request_of(spans)) == len(spans)
    finally:
        store.close()
    before = rows_checksum(db, ids)
    assert {row[0] for row in stored(db)} == ids
    yield start_collector(db_path=db), ids, before
