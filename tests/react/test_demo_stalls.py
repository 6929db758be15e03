"""``loopsight demo`` into a real collector leaves every kind of stall the Stalls page shows."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx

from loopsight.analytics.stalls import STALL_KINDS


def test_default_demo_gives_every_stall_kind(collector_server) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "loopsight", "demo", "--endpoint", collector_server.url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 10
    while True:
        stalls = httpx.get(f"{collector_server.url}/api/v1/stalls", params={"limit": 1000}, timeout=10).json()["stalls"]
        kinds = {s["kind"] for s in stalls}
        if kinds == set(STALL_KINDS) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert kinds == set(STALL_KINDS), stalls
    by_kind = {s["kind"]: s for s in stalls}
    assert by_kind["slow_call"]["tool"] == "chat gpt-4o-mini" and by_kind["slow_call"]["duration_ms"] > 2000
    assert by_kind["backoff"]["tool"] == "query_order" and by_kind["backoff"]["duration_ms"] >= 1000
    assert by_kind["idle_gap"]["duration_ms"] > 2000
    assert by_kind["stuck"]["tool"] == "get_metrics" and by_kind["stuck"]["duration_ms"] > 300_000
    # the customers' conversations: the Sessions page, and one customer asking three times
    sessions = httpx.get(f"{collector_server.url}/api/v1/sessions", timeout=10).json()["sessions"]
    again = [s for s in sessions if s["session_id"].endswith("-again")]
    assert len(sessions) >= 5 and [s["runs"] for s in again] == [3], sessions
    loops = httpx.get(f"{collector_server.url}/api/v1/loops", params={"session": again[0]["session_id"]}, timeout=10)
    across = {(x["kind"], x["tool"]) for x in loops.json()["loops"] if x["scope"] == "session"}
    assert {("exact", "query_order"), ("exact", "track_parcel")} <= across, loops.json()
