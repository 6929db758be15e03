"""A collector that cannot open its store says why, exits 2, and prints no traceback.

Each case starts the real ``python -m loopsight collector --db ...`` process.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path


def _fails_cleanly(start_collector: Callable, db: Path, *expected: str, extra: tuple[str, ...] = ()) -> str:
    server = start_collector(*extra, db_path=db, wait=False)
    code = server.process.wait(timeout=90)
    log = server.log()
    assert code == 2, f"exit code {code}:\n{log}"
    assert "Traceback" not in log, log
    assert "error:" in log, log
    flat = " ".join(log.split()).lower()
    for word in expected:
        assert any(w.lower() in flat for w in word.split("|")), f"{word!r} not in:\n{log}"
    return log


def test_db_locked_by_another_process(start_collector, tmp_path: Path) -> None:
    db = tmp_path / "held.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); c.execute('CREATE TABLE x(a INT)');"
            " print('held', flush=True); time.sleep(120)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        _fails_cleanly(start_collector, db, "lock", str(db))
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()


def test_missing_directory(start_collector, tmp_path: Path) -> None:
    db = tmp_path / "no" / "such" / "dir" / "x.duckdb"
    _fails_cleanly(start_collector, db, str(db.parent))
    assert not db.parent.exists()


def test_read_only_directory(start_collector, mounted) -> None:
    # root ignores permission bits, so a read-only filesystem is the honest test
    directory = mounted("ro", "1m", "ro")
    _fails_cleanly(start_collector, directory / "x.duckdb", "read-only|not writable")


def test_corrupt_file(start_collector, tmp_path: Path) -> None:
    db = tmp_path / "corrupt.duckdb"
    junk = os.urandom(256 * 1024)
    db.write_bytes(junk)
    _fails_cleanly(start_collector, db, str(db))
    assert db.read_bytes() == junk, "a corrupt file must be left as it was for inspection"


def test_not_a_duckdb_file(start_collector, tmp_path: Path) -> None:
    db = tmp_path / "notes.txt"
    db.write_text("these are my notes, not a database\n" * 100)
    _fails_cleanly(start_collector, db, str(db))
    assert db.read_text().startswith("these are my notes")


def test_port_taken(start_collector, tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        server = start_collector(http_port=port, wait=False)
        assert server.process.wait(timeout=90) == 2, server.log()
        assert "Traceback" not in server.log()
        assert str(port) in server.log()
