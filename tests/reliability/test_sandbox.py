"""DuckDB connections that serve queries cannot touch files outside the database."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from spans import request_of, tool_span

OUTSIDE = [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM glob('/etc/*')",
    "COPY (SELECT 1) TO '{tmp}/leak.csv'",
    "ATTACH '{tmp}/other.duckdb' AS other",
    "INSTALL httpfs",
]


@pytest.mark.parametrize("sql", OUTSIDE)
def test_reader_cannot_reach_files_outside_the_database(store, tmp_path: Path, sql: str) -> None:
    reader = store.reader()
    try:
        with pytest.raises(duckdb.Error, match=r"disabled by configuration|Permission"):
            reader.execute(sql.format(tmp=tmp_path)).fetchall()
    finally:
        reader.close()
    assert not (tmp_path / "leak.csv").exists()
    assert not (tmp_path / "other.duckdb").exists()


def test_reader_cannot_switch_external_access_back_on(store) -> None:
    reader = store.reader()
    try:
        for sql in ("SET enable_external_access = true", "SET allowed_directories = ['/']"):
            with pytest.raises(duckdb.Error):
                reader.execute(sql)
        with pytest.raises(duckdb.Error):
            reader.execute("SELECT * FROM read_csv('/etc/passwd')").fetchall()
    finally:
        reader.close()


def test_writer_still_commits_with_external_access_off(store) -> None:
    from loopsight.stores import ingest_request

    assert ingest_request(store, request_of([tool_span(b"\x01" * 16, b"\x02" * 8, 1_700_000_000_000_000_000)])) == 1
    reader = store.reader()
    try:
        assert reader.execute("SELECT count(*) FROM spans").fetchone()[0] == 1
    finally:
        reader.close()
