"""Stopping a child process the tests started, whatever state it is in."""

from __future__ import annotations

import signal
import subprocess


def stop_process(process: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
    """Send ``sig`` if it still runs and wait for the exit code (SIGKILL if it does not exit in time)."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    return process.returncode
