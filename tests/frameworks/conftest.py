"""The framework matrix: recordings of real agent frameworks replayed through a real collector."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "frameworks: replays the recorded framework traces (tests/frameworks/recordings)"
    )
