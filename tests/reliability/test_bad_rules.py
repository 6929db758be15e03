"""Rule files with errors: ``loopsight alerts check`` and ``loopsight collector --rules`` exit 2
with a message naming the file and line, and print no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

GOOD = '[[rules]]\nname = "loops"\nmetric = "loop_rate"\nwindow = "5m"\nthreshold = 0.3\n'
BAD = {
    "toml syntax": ('[[rules]]\nname = "loops"\nmetric = loop_rate\n', 3),
    "unterminated string": ('[[rules]]\nname = "loops\n', 2),
    "unknown metric": ('[[rules]]\nname = "x"\nmetric = "vibes"\nwindow = "5m"\nthreshold = 1\n', 3),
    "bad window": ('[[rules]]\nname = "x"\nmetric = "loop_rate"\nwindow = "soon"\nthreshold = 1\n', 4),
    "threshold not a number": ('[[rules]]\nname = "x"\nmetric = "loop_rate"\nwindow = "5m"\nthreshold = "high"\n', 5),
    "negative window": ('[[rules]]\nname = "x"\nmetric = "loop_rate"\nwindow = "-5m"\nthreshold = 1\n', 4),
    "duplicate rule names": (GOOD + "\n" + GOOD, 8),
    "notify target unknown": (GOOD + 'notify = ["carrier-pigeon:home"]\n', 6),
    "sql in a field": (
        '[[rules]]\nname = "x"\nmetric = "tool_fail_rate"\ntool = 42\nwindow = "5m"\nthreshold = 1\n',
        4,
    ),
}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    from loopsight.stores.duckdb_store import Store

    path = str(tmp_path_factory.mktemp("rules") / "empty.duckdb")
    Store.open(path).close()
    return path


def _check(rules: Path, db: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopsight", "alerts", "check", "--rules", str(rules), "--db", db],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("case", sorted(BAD))
def test_alerts_check_names_the_line(tmp_path: Path, db: str, case: str) -> None:
    text, line = BAD[case]
    rules = tmp_path / "bad.toml"
    rules.write_text(text)
    done = _check(rules, db)
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2, output
    assert "Traceback" not in output
    assert f"{rules}:{line}" in output or f"line {line}" in output, output


def test_unreadable_rule_files(tmp_path: Path, db: str) -> None:
    for name, content, codes in (("binary.toml", b"\xff\xfe\x00\x01garbage", {2}), ("empty.toml", b"", {0, 2})):
        rules = tmp_path / name
        rules.write_bytes(content)
        done = _check(rules, db)
        assert done.returncode in codes and "Traceback" not in done.stderr + done.stdout, done.stderr
    done = _check(tmp_path / "missing.toml", db)
    assert done.returncode == 2 and "missing.toml" in done.stderr + done.stdout


def test_collector_refuses_bad_rules(start_collector, tmp_path: Path) -> None:
    rules = tmp_path / "bad.toml"
    rules.write_text(BAD["unknown metric"][0])
    server = start_collector("--rules", str(rules), wait=False)
    assert server.process.wait(timeout=90) == 2, server.log()
    assert f"{rules}:3" in " ".join(server.log().split()) and "Traceback" not in server.log()
