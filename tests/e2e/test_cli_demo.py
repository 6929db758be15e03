"""``loopsight demo`` and ``up --demo`` against real collectors: the token is sent, and spans
that do not arrive make the command fail with the endpoint and the reason."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from processes import stop_process

DEMO = ("demo", "--runs", "2", "--speed", "50")


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    return subprocess.run(
        [sys.executable, "-m", "loopsight", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**clean, **(env or {})},
    )


def listed(server) -> list[dict]:
    return httpx.get(server.url + "/api/v1/runs", headers=server.headers, timeout=30).json()["runs"]


def test_demo_sends_the_token_from_the_flag_or_the_environment(start_collector) -> None:
    server = start_collector(token="s3cret")
    by_flag = cli(*DEMO, "--endpoint", server.url, "--token", "s3cret")
    assert by_flag.returncode == 0, by_flag.stderr
    by_env = cli(*DEMO, "--seed", "8", "--endpoint", server.url, env={"LOOPSIGHT_TOKEN": "s3cret"})
    assert by_env.returncode == 0, by_env.stderr
    assert len(listed(server)) == 4


def test_demo_fails_when_the_collector_refuses_its_spans(start_collector) -> None:
    server = start_collector(token="s3cret")
    done = cli(*DEMO, "--endpoint", server.url)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{server.url}/v1/traces" in done.stderr and "401" in done.stderr and "--token" in done.stderr
    assert "Traceback" not in done.stderr and "demo: 2 runs" not in done.stdout
    wrong = cli(*DEMO, "--endpoint", server.url, "--token", "nope")
    assert wrong.returncode == 1 and "401" in wrong.stderr
    assert listed(server) == []


def test_demo_fails_when_nothing_listens() -> None:
    started = time.monotonic()
    done = cli(*DEMO, "--endpoint", "http://127.0.0.1:1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "http://127.0.0.1:1/v1/traces" in done.stderr and "cannot connect" in done.stderr
    assert "Traceback" not in done.stderr and "demo: 2 runs" not in done.stdout
    assert time.monotonic() - started < 30


def test_up_passes_its_token_to_the_demo(tmp_path: Path, free_tcp_port) -> None:
    http_port = free_tcp_port()
    log = tmp_path / "up.log"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    args = [
        "up",
        "--demo",
        "--demo-runs",
        "3",
        "--demo-every",
        "0",
        "--db",
        str(tmp_path / "up.duckdb"),
        "--http-port",
        str(http_port),
        "--grpc-port",
        str(free_tcp_port()),
        "--dashboard-port",
        str(free_tcp_port()),
    ]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "loopsight", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**clean, "LOOPSIGHT_TOKEN": "s3cret"},
        )
    try:
        deadline = time.monotonic() + 120
        while "Ctrl-C" not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "demo traffic sent" in log.read_text(), log.read_text()
        runs = httpx.get(
            f"http://127.0.0.1:{http_port}/api/v1/runs", headers={"Authorization": "Bearer s3cret"}, timeout=30
        )
        assert len(runs.json()["runs"]) == 3, log.read_text()
        # Its collector killed, up says so and stops within seconds (it slept an hour before it looked).
        collector = next(
            int(pid)
            for pid in os.listdir("/proc")
            if pid.isdigit()
            and _parent(int(pid)) == process.pid
            and b"collector" in Path(f"/proc/{pid}/cmdline").read_bytes()
        )
        os.kill(collector, signal.SIGKILL)
        assert process.wait(20) == 2
        assert "a child process exited" in log.read_text(), log.read_text()
    finally:
        stop_process(process)


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def test_demo_fails_when_spans_are_refused_after_the_first_check(start_collector) -> None:
    server = start_collector("--max-body-bytes", "64")  # the empty check request fits, no batch of spans does
    done = cli(*DEMO, "--endpoint", server.url)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"spans did not reach {server.url}/v1/traces" in done.stderr and "demo: 2 runs" not in done.stdout
    assert listed(server) == []


def test_up_stops_before_anything_starts_when_a_port_is_taken(start_collector, tmp_path: Path) -> None:
    """Another collector on the HTTP port answered up's /healthz and got all its demo runs."""
    from ports import free_port

    other = start_collector()
    port = int(other.url.rsplit(":", 1)[1])
    db = tmp_path / "mine.duckdb"
    args = ["up", "--demo", "--demo-every", "0", "--db", str(db), "--http-port", str(port)]
    done = cli(*args, "--grpc-port", str(free_port()), "--dashboard-port", str(free_port()), timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"cannot listen on 127.0.0.1:{port} for OTLP/HTTP" in done.stderr and "--http-port" in done.stderr
    assert listed(other) == [] and not db.exists()
