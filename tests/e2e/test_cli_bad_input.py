"""Bad input to the CLI ends in one ``error: ...`` line and a non-zero exit, before anything
starts, and never in a traceback; what a collector acknowledged is said even when sending stops."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from ports import free_port
from processes import stop_process

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "collector" / "fixtures").glob("*.json"))
FIRES = '[[rules]]\nname = "any"\nmetric = "loop_rate"\nwindow = "3650d"\nthreshold = 1.0\n'


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    return subprocess.run(
        [sys.executable, "-m", "loopsight", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**clean, **(env or {})},
    )


def one_error(done: subprocess.CompletedProcess[str], *words: str, code: int = 2) -> None:
    """Exit ``code``, no traceback, and an ``error:`` line naming ``words``."""
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors, done.stderr
    assert all(word in " ".join(done.stderr.split()) for word in words), done.stderr


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("loaded") / "x.duckdb"
    done = cli("ingest", *map(str, FIXTURES), "--db", str(db))
    assert done.returncode == 0, done.stderr
    return db


def test_up_refuses_one_port_twice_before_starting_anything(tmp_path: Path) -> None:
    port = free_port()
    db = tmp_path / "up.duckdb"
    done = cli("up", "--http-port", str(port), "--dashboard-port", str(port), "--db", str(db), timeout=60)
    one_error(done, f"--http-port and --dashboard-port are both {port}")
    assert not db.exists(), "no collector started"
    grpc = cli("up", "--grpc-port", str(port), "--dashboard-port", str(port), "--db", str(db), timeout=60)
    one_error(grpc, f"--grpc-port and --dashboard-port are both {port}")


@pytest.mark.parametrize("kind", ["missing", "directory", "text", "bogus-store", "chdb-missing", "chdb-empty"])
def test_dashboard_checks_its_source_before_serving(tmp_path: Path, kind: str) -> None:
    (tmp_path / "dir.duckdb").mkdir()
    (tmp_path / "text.duckdb").write_text("not a database\n")
    args = {
        "missing": ["--db", str(tmp_path / "nonexist.duckdb")],
        "directory": ["--db", str(tmp_path / "dir.duckdb")],
        "text": ["--db", str(tmp_path / "text.duckdb")],
        "bogus-store": ["--store", "bogus://x"],
        # chdb's engine is only started by the dashboard's own process: the folder is checked first
        "chdb-missing": ["--store", f"chdb://{tmp_path / 'no-store'}"],
        "chdb-empty": ["--store", f"chdb://{tmp_path / 'dir.duckdb'}"],
    }[kind]
    done = cli("dashboard", *args, "--port", str(free_port()), timeout=60)
    said = {
        "missing": "does not exist",
        "directory": "is a directory",
        "text": "cannot open",
        "bogus-store": "bogus",
        "chdb-missing": "no chdb store at",
        "chdb-empty": "holds no database 'default'",
    }
    one_error(done, said[kind])
    runs = cli("runs", *args)  # the same message as `loopsight runs` for the same input
    assert runs.returncode == 2 and runs.stderr == done.stderr


def test_dashboard_refuses_a_host_it_cannot_bind(loaded: Path) -> None:
    done = cli("dashboard", "--db", str(loaded), "--host", "999.1.1.1", "--port", str(free_port()), timeout=60)
    one_error(done, "cannot listen on 999.1.1.1")


@pytest.mark.parametrize(
    "args",
    [
        ["runs", "--collector", "http://[::1"],
        ["budgets", "--collector", "http://[::1"],
        ["alerts", "check", "--rules", "rules.toml", "--collector", "http://[::1"],
        ["demo", "--runs", "1", "--endpoint", "http://[::1"],
        ["ingest", str(FIXTURES[0]), "--collector", "http://[::1"],
        ["collector", "--dashboard-url", "notaurl"],
    ],
    ids=["runs", "budgets", "alerts", "demo", "ingest", "collector"],
)
def test_a_malformed_url_is_one_error_line(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "rules.toml").write_text(FIRES)
    args = [str(tmp_path / a) if a == "rules.toml" else a for a in args]
    if args[0] == "collector":
        args += ["--db", str(tmp_path / "c.duckdb"), "--http-port", str(free_port()), "--grpc-port", "0"]
    done = cli(*args, timeout=60)
    one_error(done, "is not an http(s) URL")
    assert not (tmp_path / "c.duckdb").exists()


def test_a_closed_stdout_pipe_keeps_the_commands_own_exit_code(loaded: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(FIRES)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    for args in (["runs", "--json"], ["budgets", "--curve"], ["alerts", "check", "--rules", str(rules)]):
        reader, writer = os.pipe()
        os.close(reader)  # `| head -1` already gone
        done = subprocess.run(
            [sys.executable, "-m", "loopsight", *args, "--db", str(loaded)],
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env=clean,
        )
        os.close(writer)
        assert done.returncode == 0, (args, done.returncode, done.stderr)  # no rule fires: never 1
        assert "Traceback" not in done.stderr


def test_ingest_and_collector_refuse_both_db_and_store(tmp_path: Path) -> None:
    other = f"duckdb:///{tmp_path / 'other.duckdb'}"
    done = cli("ingest", str(FIXTURES[0]), "--db", str(tmp_path / "x.duckdb"), "--store", other)
    one_error(done, "give one of --db or --store")
    assert not (tmp_path / "x.duckdb").exists() and not (tmp_path / "other.duckdb").exists()
    port = str(free_port())
    collector = cli("collector", "--db", str(tmp_path / "x.duckdb"), "--store", other, "--http-port", port, timeout=60)
    one_error(collector, "give one of --db or --store")


def test_a_cut_gzip_file_loads_its_complete_records(tmp_path: Path) -> None:
    lines = b"".join(json.dumps(json.loads(path.read_text())).encode() + b"\n" for path in FIXTURES[:6])
    whole = gzip.compress(lines)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) * 4 // 5])
    db = tmp_path / "x.duckdb"
    done = cli("ingest", str(cut), "--db", str(db))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "cut short" in done.stdout
    stored = int(done.stdout.split(" stored")[0].rsplit(" ", 1)[-1])
    assert stored > 0, done.stdout


def test_a_gzip_file_of_many_members_loads_in_linear_time(tmp_path: Path) -> None:
    """A file of 300,000 gzip members (6 MB, as ``cat`` of many small ``.gz`` files makes): the
    rest of the file was copied after every member to look for zero padding, which took about a
    minute; the records of its first and last members load."""
    lines = b"".join(json.dumps(json.loads(path.read_text())).encode() + b"\n" for path in FIXTURES[:2])
    once, many = tmp_path / "once.jsonl", tmp_path / "many.jsonl.gz"
    once.write_bytes(lines)
    many.write_bytes(gzip.compress(lines) + gzip.compress(b"", mtime=0) * 300_000 + gzip.compress(lines))

    def spans_read(done: subprocess.CompletedProcess[str]) -> int:
        assert done.returncode == 0 and "Traceback" not in done.stderr, (done.stdout, done.stderr)
        return int(done.stdout.split(" spans read")[0].split()[-1])

    expected = 2 * spans_read(cli("ingest", str(once), "--db", str(tmp_path / "ref.duckdb")))
    started = time.monotonic()
    done = cli("ingest", str(many), "--db", str(tmp_path / "x.duckdb"), timeout=60)
    assert time.monotonic() - started < 30
    assert spans_read(done) == expected > 0, done.stdout


def test_db_upgrade_refuses_a_missing_file_unless_told_to_create(tmp_path: Path) -> None:
    typo = tmp_path / "typo.duckdb"
    done = cli("db", "upgrade", "--db", str(typo))
    one_error(done, "no DuckDB file at", "--create")
    assert not typo.exists()
    created = cli("db", "upgrade", "--db", str(typo), "--create")
    assert created.returncode == 0 and typo.is_file(), created.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["collector", "--alert-interval", "inf"], "'inf' is not finite"),
        (["collector", "--alert-interval", "nan"], "'nan' is not a number"),
        (["demo", "--speed", "nan"], "'nan' is not a number"),
    ],
)
def test_numbers_that_are_not_finite_are_named(args: list[str], said: str) -> None:
    done = cli(*args, timeout=60)
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr


def test_sizes_runs_db_and_prices_errors_are_one_line(tmp_path: Path) -> None:
    port = str(free_port())
    tb = cli("collector", "--memory-budget", "2XB", "--db", str(tmp_path / "c.duckdb"), "--http-port", port)
    one_error(tb, "B, KB, MB, GB or TB")
    empty = cli("runs", "--db", "", env={"LOOPSIGHT_COLLECTOR_URL": "http://127.0.0.1:9"})
    one_error(empty, "--db is empty")
    for value, said in (
        ("ftp://x", "LOOPSIGHT_COLLECTOR_URL 'ftp://x' is not an http(s) URL"),
        (" ", "LOOPSIGHT_COLLECTOR_URL is empty"),
    ):
        from_env = cli("runs", env={"LOOPSIGHT_COLLECTOR_URL": value})
        one_error(from_env, said)  # the variable is named, not a flag that was never given
        assert "--collector" not in from_env.stderr, from_env.stderr
    far = cli("runs", "--since", "-999999999d", "--collector", "http://127.0.0.1:9")
    one_error(far, "--since '-999999999d' reaches back more than 100 years")
    prices = tmp_path / "bad.yaml"
    prices.write_text("a: [b\n")
    bad = cli("ingest", str(FIXTURES[0]), "--db", str(tmp_path / "x.duckdb"), "--prices", str(prices))
    one_error(bad, "not valid YAML")
    assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr


class _Collector(BaseHTTPRequestHandler):
    """A stand-in collector: answers the first request, then ``mode`` (``hang``: never; ``die``: drops the connection)."""

    mode = "hang"
    seen = threading.Event()
    count = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).count += 1
        if type(self).count > 1:
            type(self).seen.set()
            if self.mode == "hang":
                time.sleep(30)
            self.close_connection = True
            self.wfile.flush()
            self.connection.close()
            return
        body = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stand_in() -> Iterator[tuple[str, type[_Collector]]]:
    handler = type("Handler", (_Collector,), {"seen": threading.Event(), "count": 0})
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", handler
    server.shutdown()
    server.server_close()


def test_ctrl_c_while_sending_says_what_was_acknowledged(stand_in: tuple[str, type[_Collector]]) -> None:
    url, handler = stand_in
    handler.mode = "hang"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", "loopsight", "ingest", *map(str, FIXTURES[:3]), "--collector", url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean,
    )
    try:
        assert handler.seen.wait(60), "the second request arrived"
        process.send_signal(signal.SIGINT)
        out, errors = process.communicate(timeout=30)
    finally:
        stop_process(process)
    assert process.returncode == 130 and "Traceback" not in errors, (process.returncode, out, errors)
    assert "interrupted:" in errors and "acknowledged" in errors
    assert int(errors.split("interrupted:")[1].split()[0]) > 0


def test_a_collector_gone_mid_run_says_what_was_acknowledged(stand_in: tuple[str, type[_Collector]]) -> None:
    url, handler = stand_in
    handler.mode = "die"
    done = cli("ingest", *map(str, FIXTURES[:3]), "--collector", url)
    one_error(done, "cannot send", "acknowledged")
    assert int(done.stderr.split(";")[-1].split()[0]) > 0, done.stderr


def test_ingest_splits_what_is_over_the_collectors_body_limit(start_collector, tmp_path: Path) -> None:
    running = start_collector("--max-body-bytes", "20000")
    doc = json.loads(FIXTURES[0].read_text())
    scope = doc["resourceSpans"][0]["scopeSpans"][0]
    spans = []
    for trace in range(40):
        for span in scope["spans"]:
            span = {**span, "traceId": f"{trace + 1:032x}", "spanId": f"{len(spans) + 1:016x}"}
            span["attributes"] = [*span.get("attributes", []), {"key": "pad", "value": {"stringValue": "x" * 1000}}]
            spans.append(span)
    scope["spans"] = spans
    big = tmp_path / "big.json"
    big.write_text(json.dumps(doc))
    done = cli("ingest", str(big), "--collector", running.url)
    said = (done.stdout + done.stderr).replace(running.url, "URL")  # a port such as 41337 holds "413"
    assert "413" not in said and "Traceback" not in done.stderr, said
    assert done.returncode == 0 and ": 120 acknowledged" in done.stdout, done.stdout
    scope["spans"] = spans[:1]
    spans[0]["attributes"].append({"key": "huge", "value": {"stringValue": "y" * 30000}})
    big.write_text(json.dumps(doc))
    alone = cli("ingest", str(big), "--collector", running.url)
    assert alone.returncode == 1
    line = next(line for line in alone.stdout.splitlines() if line.startswith("skipped:"))
    assert "413 Request Entity Too Large: body of " in line and line.endswith("is over the 20000-byte limit"), line


@contextlib.contextmanager
def static_site(folder: Path) -> Iterator[str]:
    """Python's own file server on ``folder``: another service at the --collector URL."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"], cwd=folder)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(server)


def test_a_non_collector_answer_is_one_line(tmp_path: Path) -> None:
    with static_site(tmp_path) as url:
        done = cli("ingest", str(FIXTURES[0]), "--collector", url)
    assert done.returncode == 1
    skipped = [line for line in done.stdout.splitlines() if line.startswith("skipped:")]
    assert len(skipped) == 1 and "501" in skipped[0], done.stdout
    assert not any(line.lstrip().startswith("<") for line in done.stdout.splitlines()), done.stdout


def test_readers_refuse_json_that_is_not_a_collectors_in_one_line(tmp_path: Path) -> None:
    """Another service's JSON at the --collector URL (200, but not loopsight's shapes)."""
    (tmp_path / "api" / "v1").mkdir(parents=True)
    for name, body in {"healthz": {"status": "ok"}, "api/v1/runs": {}, "api/v1/budgets": {"agents": "none"}}.items():
        (tmp_path / name).write_text(json.dumps(body))
    with static_site(tmp_path) as url:
        runs, budgets = cli("runs", "--collector", url), cli("budgets", "--collector", url)
    for done in (runs, budgets):
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "a loopsight collector?" in done.stderr, done.stderr


def test_up_children_stop_when_up_is_killed(tmp_path: Path) -> None:
    http_port, dashboard_port = free_port(), free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    args = ["up", "--db", str(tmp_path / "up.duckdb"), "--http-port", str(http_port), "--grpc-port", "0"]
    with open(tmp_path / "up.log", "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "loopsight", *args, "--dashboard-port", str(dashboard_port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=clean,
        )
    try:
        deadline = time.monotonic() + 120
        up = False
        while not up and time.monotonic() < deadline:
            try:
                up = httpx.get(f"http://127.0.0.1:{dashboard_port}/_stcore/health", timeout=1).status_code == 200
            except httpx.HTTPError:
                time.sleep(0.3)
        assert up, (tmp_path / "up.log").read_text()
    finally:
        stop_process(process, signal.SIGKILL)
    deadline = time.monotonic() + 60
    alive = True
    while alive and time.monotonic() < deadline:
        alive = False
        for url in (f"http://127.0.0.1:{http_port}/healthz", f"http://127.0.0.1:{dashboard_port}/_stcore/health"):
            try:
                httpx.get(url, timeout=1)
                alive = True
            except httpx.HTTPError:
                pass
        time.sleep(0.3)
    assert not alive, "the collector and dashboard stop with `loopsight up`"


def test_an_unreachable_clickhouse_server_is_one_error_line() -> None:
    done = cli("runs", "--store", f"clickhouse://u:p@127.0.0.1:{free_port()}/db", timeout=120)
    one_error(done, "cannot open the store")
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # no driver log line, no wrapped message


def test_a_chdb_store_a_collector_holds_is_refused_in_one_line(tmp_path: Path, start_collector) -> None:
    """chdb gives its folder to one process: the others say so, with the way to read it, instead
    of chdb's own lock error and an "error initializing EmbeddedServer"."""
    store = f"chdb://{tmp_path / 'ch'}"
    server = start_collector("--store", store, startup_timeout=90)
    for args in (["runs", "--store", store], ["dashboard", "--store", store, "--port", str(free_port())]):
        done = cli(*args, timeout=90)
        one_error(done, "is in use by another process", "--collector URL")
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # not chdb's own lock line too
    second = cli("collector", "--store", store, "--http-port", str(free_port()), "--grpc-port", str(free_port()))
    one_error(second, "is in use by another process")
    assert cli("runs", "--collector", server.url).returncode == 0  # the way it names works


def test_ctrl_c_while_loading_says_what_was_committed(tmp_path: Path) -> None:
    """Ctrl-C during a local `ingest`: what was queued is committed, and the message's count is
    what the file holds (not a silent stop)."""
    import struct

    from spans import make_run, request_of, span_count

    stream = tmp_path / "many.pb"
    with open(stream, "wb") as out:
        for _ in range(150):  # 150 requests of 100 runs (400 spans): several seconds to load
            body = request_of(span for _ in range(100) for span in make_run(tools=2)).SerializeToString()
            out.write(struct.pack(">I", len(body)) + body)
    db = tmp_path / "x.duckdb"
    wal = tmp_path / "x.duckdb.wal"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", "loopsight", "ingest", str(stream), "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean,
    )
    try:
        deadline = time.monotonic() + 60
        while not wal.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)  # the store is being made
        time.sleep(0.8)  # into the load (3 s here), or still opening: either is said, never a traceback
        assert process.poll() is None, "the load ended before it could be interrupted"
        process.send_signal(signal.SIGINT)
        out, errors = process.communicate(timeout=60)
    finally:
        stop_process(process)
    assert process.returncode == 130 and "Traceback" not in errors, (process.returncode, out, errors)
    said = [line for line in errors.splitlines() if line.startswith("error: interrupted")]
    assert len(said) == 1 and len(errors.strip().splitlines()) == 1, errors
    if "while opening the store" in said[0]:
        assert span_count(str(db)) == 0
        return
    committed = int(said[0].split("interrupted:")[1].split()[0])
    assert committed < 60_000 and committed == span_count(str(db)), (said, span_count(str(db)))
    assert "0 of 1 file(s) read whole" in said[0] and "skips the spans already stored" in said[0]
