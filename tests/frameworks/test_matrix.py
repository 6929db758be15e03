"""Every recorded framework scenario, replayed through a real collector, must come out as the
driver observed it: one run per agent invocation, named as the user named the agent, steps, tool
calls, failed calls, tokens, status and termination reason exactly, every loop found with its kind
and no false loop. The recordings are made by ``recorder/record.py`` (``make record-frameworks``);
``recorder/matrix.py`` holds the replay and the comparison, and prints the same matrix."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from recorder.matrix import Cell, run_matrix, scenario_dirs, table  # noqa: E402

pytestmark = pytest.mark.frameworks
DIRS = scenario_dirs()


@pytest.fixture(scope="module")
def matrix(collector_launcher: Callable[..., Any]) -> dict[str, Cell]:
    collector = collector_launcher()
    try:
        cells = run_matrix(collector.url, DIRS, headers=collector.headers)
    finally:
        collector.stop()
    print("\n" + table(cells))
    return {f"{c.config}/{c.scenario}": c for c in cells}


def test_recordings_exist() -> None:
    configs = {d.parent.name for d in DIRS}
    assert len(configs) >= 12, sorted(configs)


@pytest.mark.parametrize("case", [f"{d.parent.name}/{d.name}" for d in DIRS])
def test_framework_scenario(matrix: dict[str, Cell], case: str) -> None:
    cell = matrix[case]
    assert cell.ok, f"{case}: " + "; ".join(cell.mismatches)
