"""A DuckDB file written by an older loopsight, opened read-only with ``--db``: the dashboard says
which revision the file is at and the command that upgrades it, instead of a missing-table error;
after that command, the same file reads normally."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
from dashboard_helpers import assert_clean, page, tables, texts

from loopsight.migrations.runner import head, upgrade


def _old_file(tmp_path: Path, filled: str, revision: str) -> str:
    """A file as revision ``revision`` made it, holding the spans of ``filled``."""
    path = str(tmp_path / "old.duckdb")
    assert upgrade(path, revision) == revision
    con = duckdb.connect(path)
    try:
        con.execute("ATTACH $p AS source (READ_ONLY)", {"p": filled})
        old = {r[0] for r in con.execute("SELECT name FROM pragma_table_info('spans')").fetchall()}
        now = [r[0] for r in con.execute("SELECT name FROM pragma_table_info('source.spans')").fetchall()]
        shared = ", ".join(f'"{c}"' for c in now if c in old)  # the columns that revision stored
        con.execute(f"INSERT INTO spans BY NAME SELECT {shared} FROM source.spans")
        con.execute("DETACH source")
    finally:
        con.close()
    return path


def test_an_old_revision_file_says_how_to_upgrade_it(tmp_path: Path, filled_db, make_app) -> None:
    path = _old_file(tmp_path, filled_db.path, "0004")
    assert head() != "0004"
    for name in ("overview", "stalls", "burn"):
        app = page(make_app(db=path), name)
        assert not app.exception, [e.value for e in app.exception]
        (_error,) = app.error
        shown = texts(app)
        assert f"is at schema revision 0004, this loopsight reads revision {head()}" in shown
        assert "Catalog Error" not in shown and "does not exist" not in shown
        assert [c.value for c in app.code] == [f"loopsight db upgrade --db {path}"]

    done = subprocess.run(
        [sys.executable, "-m", "loopsight", "db", "upgrade", "--db", path], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    app = page(make_app(db=path), "stalls")
    assert_clean(app)
    _stuck, past = tables(app)
    assert set(past["kind"]) >= {"retry backoff", "idle gap"}  # read from the tables the upgrade filled
