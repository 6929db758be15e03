"""``--store`` on the CLI: the same files ingested into DuckDB and chdb list the same runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "collector" / "fixtures").glob("*.json"))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loopsight", *args], capture_output=True, text=True, timeout=300)


def test_ingest_and_runs_through_store_urls(tmp_path: Path) -> None:
    pytest.importorskip("chdb")
    assert FIXTURES, "the collector's recorded OTLP JSON fixtures are missing"
    listed = {}
    for url in (f"duckdb:///{tmp_path / 'a.duckdb'}", f"chdb:///{tmp_path / 'ch'}"):
        loaded = cli("ingest", *map(str, FIXTURES), "--store", url)
        assert loaded.returncode == 0, loaded.stderr
        shown = cli("runs", "--store", url, "--json")
        assert shown.returncode == 0, shown.stderr
        listed[url.split(":")[0]] = [json.loads(line) for line in shown.stdout.splitlines()]
    assert listed["duckdb"], "the fixtures hold at least one run"
    assert listed["duckdb"] == listed["chdb"]


def test_unknown_store_scheme_is_a_clear_error() -> None:
    done = cli("runs", "--store", "ftp://somewhere/db")
    assert done.returncode == 2
    assert "unknown store scheme 'ftp'" in done.stderr and "Traceback" not in done.stderr


def test_store_excludes_db_and_collector(tmp_path: Path) -> None:
    done = cli("runs", "--store", f"duckdb:///{tmp_path / 'x.duckdb'}", "--db", str(tmp_path / "x.duckdb"))
    assert done.returncode == 2 and "one of --collector, --db or --store" in done.stderr
