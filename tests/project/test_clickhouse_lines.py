"""The figure issue 23 is measured by (``bench/clickhouse_lines.py``): what counts, and how."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("clickhouse_lines", ROOT / "bench" / "clickhouse_lines.py")
assert _spec and _spec.loader
lines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lines)

SOURCE = '''"""A module docstring,
on two lines."""

# a comment
X = 1  # code with a comment


def f(a: int) -> int:
    """A function's docstring."""
    return (a +
            1)
'''


def test_code_lines_leave_out_docstrings_comments_and_blank_lines() -> None:
    assert len(SOURCE.splitlines()) == 11
    assert lines.code_lines("m.py", SOURCE) == 4  # X = 1, def, and the return on two lines
    assert lines.code_lines("q.sql", "-- a question\nSELECT 1\n\n  -- more\nFROM t\n") == 2


def test_only_library_files_naming_clickhouse_count() -> None:
    assert lines.counted("stores/clickhouse_store.py") and lines.counted("analytics/sql/clickhouse/runs.sql")
    assert lines.counted("stores/translate.py") and lines.counted("ingest/exporter.py")
    assert not lines.counted("tests/scale/test_parity_clickhouse.py") and not lines.counted("bench/bench_clickhouse.py")
    assert not lines.counted("stores/duckdb_store.py") and not lines.counted("docs/clickhouse.md")


def test_a_clickhouse_definition_in_a_neutral_module_counts() -> None:
    source = 'import x\n\n_CLICKHOUSE_TYPES = {\n    "a": 1,\n}\n\n\n@cache\ndef to_clickhouse(t):\n    """Doc."""\n    return t\n\n\ndef neutral():\n    return 1\n'
    found = lines.named_definitions("loopsight/model.py", source)
    assert found == {
        "loopsight/model.py::_CLICKHOUSE_TYPES": {"lines": 3, "code": 3},
        "loopsight/model.py::to_clickhouse": {"lines": 4, "code": 3},  # the decorator counted, the docstring not
    }


def test_it_measures_two_revisions_of_this_repository() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "clickhouse_lines.py"), "HEAD", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    figures = json.loads(done.stdout)
    assert figures["after_over_before"] == {"lines": 1.0, "code": 1.0}
    assert 0 < figures["after"]["code"] < figures["after"]["lines"]
    assert "stores/clickhouse_store.py" in figures["after"]["files"]
    assert "stores/translate.py" in figures["after"]["files"]
