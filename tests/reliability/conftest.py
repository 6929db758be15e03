"""Fixtures of the reliability tests (helpers live in reliability_support.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reliability_support import umount


@pytest.fixture
def mounted(tmp_path: Path):
    """Factory mounting small tmpfs filesystems under tmp_path; skips where mount is not permitted."""
    mounts: list[Path] = []

    def mount(name: str, size: str = "8m", options: str = "") -> Path:
        import subprocess

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
