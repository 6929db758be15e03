"""Where CLI commands read and write: a ``--collector``/``--db``/``--store`` flag beats any
``LOOPSIGHT_*`` variable; among variables alone ``LOOPSIGHT_STORE`` beats ``LOOPSIGHT_DB``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from processes import stop_process

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "collector" / "fixtures").glob("*.json"))
RULES = '[[rules]]\nname = "loops"\nmetric = "loop_rate"\nwindow = "3650d"\nthreshold = 1.0\n'


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    return subprocess.run(
        [sys.executable, "-m", "loopsight", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**clean, **(env or {})},
    )


def ingested(path: Path) -> Path:
    done = cli("ingest", *map(str, FIXTURES), "--db", str(path))
    assert done.returncode == 0, done.stderr
    return path


def test_ingest_db_flag_beats_loopsight_store(tmp_path: Path) -> None:
    env_db, flag_db = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    done = cli("ingest", *map(str, FIXTURES), "--db", str(flag_db), env={"LOOPSIGHT_STORE": f"duckdb:///{env_db}"})
    assert done.returncode == 0, done.stderr
    assert flag_db.exists() and not env_db.exists()


def test_ingest_without_flags_keeps_store_over_db_variable(tmp_path: Path) -> None:
    store_db, db_var = tmp_path / "s.duckdb", tmp_path / "d.duckdb"
    done = cli(
        "ingest", *map(str, FIXTURES), env={"LOOPSIGHT_STORE": f"duckdb:///{store_db}", "LOOPSIGHT_DB": str(db_var)}
    )
    assert done.returncode == 0, done.stderr
    assert store_db.exists() and not db_var.exists()


def test_collector_db_flag_beats_loopsight_store(start_collector, tmp_path: Path) -> None:
    env_db = tmp_path / "env.duckdb"
    server = start_collector(env={"LOOPSIGHT_STORE": f"duckdb:///{env_db}"})
    assert server.stop() == 0
    assert not env_db.exists()
    assert "env.duckdb" not in server.log()


def test_runs_db_flag_beats_loopsight_collector_url(tmp_path: Path) -> None:
    db = ingested(tmp_path / "x.duckdb")
    done = cli("runs", "--db", str(db), "--json", env={"LOOPSIGHT_COLLECTOR_URL": "http://127.0.0.1:9"})
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()]


def test_runs_collector_flag_beats_loopsight_store(collector_server, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "never.duckdb"
    done = cli("runs", "--collector", collector_server.url, "--json", env={"LOOPSIGHT_STORE": f"duckdb:///{missing}"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and not missing.parent.exists()


def test_runs_from_the_environment_alone(tmp_path: Path) -> None:
    db = ingested(tmp_path / "x.duckdb")
    done = cli("runs", "--json", env={"LOOPSIGHT_STORE": f"duckdb:///{db}"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    both = cli("runs", env={"LOOPSIGHT_STORE": f"duckdb:///{db}", "LOOPSIGHT_COLLECTOR_URL": "http://127.0.0.1:9"})
    assert both.returncode == 2 and "Traceback" not in both.stderr
    assert "LOOPSIGHT_COLLECTOR_URL and LOOPSIGHT_STORE" in both.stderr


def test_two_source_flags_are_an_error_naming_them(tmp_path: Path) -> None:
    done = cli("runs", "--collector", "http://127.0.0.1:9", "--db", str(tmp_path / "x.duckdb"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "one of --collector, --db or --store" in done.stderr and "--collector and --db" in done.stderr


def test_alerts_check_db_flag_beats_loopsight_collector_url(tmp_path: Path) -> None:
    db = ingested(tmp_path / "x.duckdb")
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    done = cli(
        "alerts", "check", "--rules", str(rules), "--db", str(db), env={"LOOPSIGHT_COLLECTOR_URL": "http://127.0.0.1:9"}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no rule fires" in done.stdout


def test_dashboard_db_flag_beats_loopsight_store(tmp_path: Path, free_tcp_port) -> None:
    db = ingested(tmp_path / "x.duckdb")
    port = free_tcp_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    env = {**clean, "LOOPSIGHT_STORE": "chdb:///nowhere", "LOOPSIGHT_COLLECTOR_URL": "http://127.0.0.1:9"}
    log = tmp_path / "dashboard.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "loopsight", "dashboard", "--db", str(db), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        deadline = time.monotonic() + 60
        healthy = False
        while not healthy and process.poll() is None and time.monotonic() < deadline:
            try:
                healthy = httpx.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).status_code == 200
            except httpx.HTTPError:
                time.sleep(0.2)
        assert healthy, log.read_text()
    finally:
        stop_process(process, timeout=20)


def test_ingest_sends_files_to_a_running_collector(start_collector, tmp_path: Path) -> None:
    running = start_collector(token="s3cret")
    done = cli("ingest", *map(str, FIXTURES), "--collector", running.url, "--token", "s3cret")
    assert done.returncode == 0, done.stderr
    assert "acknowledged by" in done.stdout
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        runs = httpx.get(f"{running.url}/api/v1/runs", headers=running.headers, timeout=10).json()["runs"]
        if runs:
            break
        time.sleep(0.2)
    assert runs, "the collector stored what ingest sent"
    traces = cli("ingest", str(FIXTURES[0]), "--collector", f"{running.url}/v1/traces/", "--token", "s3cret")
    assert traces.returncode == 0 and "acknowledged by" in traces.stdout, (
        traces.stdout + traces.stderr
    )  # as demo takes it
    refused = cli("ingest", *map(str, FIXTURES), "--collector", running.url)  # no token
    assert refused.returncode == 1 and "401" in refused.stderr + refused.stdout
    mixed = cli("ingest", str(FIXTURES[0]), "--collector", running.url, "--db", str(tmp_path / "x.duckdb"))
    assert mixed.returncode == 2 and "--db" in mixed.stderr
    held = cli("runs", "--db", running.db_path)  # the collector holds its file: runs points at --collector
    assert held.returncode == 2 and "read it through the collector instead (--collector URL)" in held.stderr
    assert "dashboard" not in held.stderr, held.stderr
    down = cli("ingest", str(FIXTURES[0]), "--collector", "http://127.0.0.1:9")
    assert down.returncode == 2 and "cannot send" in down.stderr


def test_runs_filters_and_columns(tmp_path: Path) -> None:
    db = ingested(tmp_path / "x.duckdb")
    every = [json.loads(line) for line in cli("runs", "--db", str(db), "--json").stdout.splitlines()]
    assert every
    agent = every[0]["agent"]
    mine = [json.loads(line) for line in cli("runs", "--db", str(db), "--json", "--agent", agent).stdout.splitlines()]
    assert mine and {r["agent"] for r in mine} == {agent} and len(mine) <= len(every)
    failed = cli("runs", "--db", str(db), "--json", "--status", "error").stdout.splitlines()
    assert all(json.loads(line)["status"] == "error" for line in failed)
    assert cli("runs", "--db", str(db), "--json", "--since", "2999-01-01").stdout == ""
    typo = cli("runs", "--db", str(db), "--termination", "max-steps")  # a producer's own reason is kept, so no refusal
    assert (
        typo.returncode == 0
        and "no runs match (--termination 'max-steps' is none of completed, max_steps" in typo.stderr
    )
    table = cli("runs", "--db", str(db)).stdout
    assert "retries" in table and "loops" in table and "started (UTC)" in table
    bad = cli("runs", "--db", str(db), "--since", "yesterday")
    assert bad.returncode == 2 and "--since" in bad.stderr
    assert cli("runs", "--db", str(db), "--status", "broken").returncode == 2
    help_text = cli("runs", "--help", env={"COLUMNS": "200"}).stdout
    assert "<bool>" not in help_text and "--json" in help_text
    assert cli("--version").stdout.startswith("loopsight ")
