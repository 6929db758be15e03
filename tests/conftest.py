"""Shared fixtures: a real collector process on free loopback ports, and a real Store.

``collector_server`` starts ``python -m loopsight collector`` with its own DuckDB file,
waits for ``/healthz`` and stops it with SIGTERM afterwards. ``start_collector`` is the
factory behind it, for extra flags, a token, a chosen DB file or several collectors::

    def test_x(start_collector):
        upstream = start_collector()
        front = start_collector("--forward-to", upstream.url, token="s3cret")
        httpx.post(front.url + "/v1/traces", headers=front.headers, ...)

``collector_launcher`` is the same factory at session scope, for module-scoped collectors.
``store`` is a :class:`loopsight.stores.duckdb_store.Store` on a DuckDB file in ``tmp_path``.

Markers are applied here, not by hand (``make test-fast`` deselects them): ``subprocess`` for a
test that starts a process (a collector fixture, a folder of such tests, or a module that uses
``subprocess``), ``chdb`` for one on the embedded ClickHouse engine, ``browser`` for Chromium.
Under ``LOOPSIGHT_TEST_FAST=1`` a test left unmarked that starts a process fails and says so.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from ports import free_port
from processes import stop_process

_PROCESS_FIXTURES = {"start_collector", "collector_server", "collector_launcher"}
_PROCESS_FOLDERS = {"e2e", "reliability", "packaging", "frameworks"}
_CHDB_FOLDERS = {"scale"}
_CHDB_FIXTURES = {"chdb_dir", "new_clickhouse"}


def _module_uses(item: pytest.Item, *names: str) -> bool:
    module = getattr(item, "module", None)
    return module is not None and any(name in vars(module) for name in names)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests = Path(__file__).resolve().parent
    for item in items:
        folder = item.path.resolve().relative_to(tests).parts[0]
        fixtures = set(getattr(item, "fixturenames", ()))
        if folder in _PROCESS_FOLDERS or fixtures & _PROCESS_FIXTURES or _module_uses(item, "subprocess"):
            item.add_marker(pytest.mark.subprocess)
        chdb = folder in _CHDB_FOLDERS or fixtures & _CHDB_FIXTURES or "chdb" in item.name
        if chdb or _module_uses(item, "chdb", "connect_chdb"):
            item.add_marker(pytest.mark.chdb)


@pytest.fixture(autouse=True)
def _no_unmarked_processes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """In ``make test-fast``, a test that starts a process without its marker fails."""
    if os.environ.get("LOOPSIGHT_TEST_FAST") != "1" or request.node.get_closest_marker("subprocess"):
        return

    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"{request.node.nodeid} starts a process: give it the subprocess marker (tests/conftest.py)")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)


@dataclass
class CollectorProcess:
    """A running ``loopsight collector`` subprocess."""

    url: str
    grpc_target: str
    db_path: str
    token: str | None
    process: subprocess.Popen[bytes]
    http_port: int
    grpc_port: int
    log_path: Path
    args: list[str] = field(default_factory=list)

    @property
    def headers(self) -> dict[str, str]:
        """``Authorization`` header when the collector has a token."""
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    @property
    def traces_url(self) -> str:
        return f"{self.url}/v1/traces"

    def metrics(self) -> dict[str, float]:
        """``/metrics`` as ``{'name{labels}': value}``."""
        text = httpx.get(self.url + "/metrics", headers=self.headers, timeout=30).text
        return {
            line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line and not line.startswith("#")
        }

    def log(self) -> str:
        """Everything the process wrote to stdout/stderr so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Send ``sig`` and wait for the exit code (SIGKILL if it does not exit in time)."""
        return stop_process(self.process, sig, timeout)

    def kill(self) -> int:
        """``kill -9``: no drain, no clean close."""
        return self.stop(signal.SIGKILL)

    def wait_healthy(self, timeout: float = 30.0) -> CollectorProcess:
        """Block until ``/healthz`` answers (for collectors started with ``wait=False``)."""
        wait_healthy(self, timeout)
        return self


_template_db: list[Path] = []


def migrated_db(directory: Path) -> Path:
    """A fresh database already at the newest revision (a copy of one migrated per session),
    so collectors in tests start without running Alembic."""
    if not _template_db:
        from loopsight.migrations import upgrade

        template = Path(tempfile.mkdtemp(prefix="loopsight-template-")) / "template.duckdb"
        upgrade(str(template))
        _template_db.append(template)
    target = directory / "collector.duckdb"
    if not target.exists():
        shutil.copyfile(_template_db[0], target)
    return target


def launch_collector(
    tmp_dir: Path,
    *extra_args: str,
    db_path: str | os.PathLike[str] | None = None,
    token: str | None = None,
    http_port: int | None = None,
    grpc_port: int | None = None,
    env: dict[str, str] | None = None,
    wait: bool = True,
    startup_timeout: float = 30.0,
) -> CollectorProcess:
    """Start a collector subprocess; with ``wait`` block until ``/healthz`` answers 200."""
    http_port = http_port or free_port()
    grpc_port = grpc_port or free_port()
    db = str(db_path or migrated_db(tmp_dir))
    args = [
        sys.executable,
        "-m",
        "loopsight",
        "collector",
        *([] if "--store" in extra_args else ["--db", db]),  # one of them: both are refused
        "--http-port",
        str(http_port),
        "--grpc-port",
        str(grpc_port),
        *(["--token", token] if token else []),
        *extra_args,
    ]
    log_path = tmp_dir / f"collector-{http_port}.log"
    proc_env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    proc_env.update(env or {})
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(args, stdout=log_file, stderr=subprocess.STDOUT, env=proc_env)
    server = CollectorProcess(
        url=f"http://127.0.0.1:{http_port}",
        grpc_target=f"127.0.0.1:{grpc_port}",
        db_path=db,
        token=token,
        process=process,
        http_port=http_port,
        grpc_port=grpc_port,
        log_path=log_path,
        args=args,
    )
    if wait:
        wait_healthy(server, startup_timeout)
    return server


def wait_healthy(server: CollectorProcess, timeout: float = 30.0) -> None:
    """Poll ``/healthz`` until 200; fail with the process log if it exits or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"collector exited with {server.process.returncode}:\n{server.log()}")
        try:
            if httpx.get(f"{server.url}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    server.stop(signal.SIGKILL)
    raise RuntimeError(f"collector did not become healthy in {timeout}s:\n{server.log()}")


@pytest.fixture
def start_collector(tmp_path: Path) -> Iterator[Callable[..., CollectorProcess]]:
    """Factory: ``start_collector(*flags, db_path=None, token=None, env=None, wait=True)``.

    Every collector it started is stopped with SIGTERM at the end of the test.
    """
    started: list[CollectorProcess] = []
    counter = iter(range(1_000_000))

    def start(*extra_args: str, **kwargs: object) -> CollectorProcess:
        directory = tmp_path / f"collector{next(counter)}"
        directory.mkdir(exist_ok=True)
        server = launch_collector(directory, *extra_args, **kwargs)  # type: ignore[arg-type]
        started.append(server)
        return server

    yield start
    for server in reversed(started):
        server.stop()


@pytest.fixture(scope="session")
def free_tcp_port() -> Callable[[], int]:
    """``free_tcp_port()`` -> a TCP port free on 127.0.0.1 right now."""
    return free_port


@pytest.fixture(scope="session")
def collector_launcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., CollectorProcess]]:
    """Session-scoped factory for module- or session-scoped collectors (stop them yourself;
    any still running at the end of the session are stopped)."""
    started: list[CollectorProcess] = []

    def start(*extra_args: str, **kwargs: object) -> CollectorProcess:
        server = launch_collector(tmp_path_factory.mktemp("collector"), *extra_args, **kwargs)  # type: ignore[arg-type]
        started.append(server)
        return server

    yield start
    for server in reversed(started):
        server.stop()


@pytest.fixture
def collector_server(start_collector: Callable[..., CollectorProcess]) -> CollectorProcess:
    """A real collector on free loopback ports with its own DuckDB file, no token."""
    return start_collector()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A real :class:`~loopsight.stores.duckdb_store.Store` on ``tmp_path/store.duckdb``."""
    from loopsight.stores.duckdb_store import Store

    opened = Store.open(str(tmp_path / "store.duckdb"))
    yield opened
    opened.close()


if TYPE_CHECKING:
    from loopsight.stores.duckdb_store import Store
