"""SIGTERM to ``loopsight dashboard`` stops its Streamlit child too (no orphan on a port)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ports import free_port


def streamlit_pids(port: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"streamlit" in b" ".join(cmdline) and str(port).encode() in cmdline:
                found.append(int(entry.name))
    return found


def test_sigterm_stops_the_streamlit_child(tmp_path: Path) -> None:
    port = free_port()
    parent = subprocess.Popen(
        [sys.executable, "-m", "loopsight", "dashboard", "--port", str(port), "--collector", "http://127.0.0.1:9"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not streamlit_pids(port) and time.monotonic() < deadline:
            time.sleep(0.2)
        children = streamlit_pids(port)
        assert children, "streamlit did not start"
        parent.send_signal(signal.SIGTERM)
        parent.wait(timeout=30)
        deadline = time.monotonic() + 15
        while streamlit_pids(port) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert streamlit_pids(port) == []
    finally:
        if parent.poll() is None:
            parent.kill()
        for pid in streamlit_pids(port):
            os.kill(pid, signal.SIGKILL)
