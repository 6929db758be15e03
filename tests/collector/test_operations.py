"""Forwarding to a second collector, retention in the background, clear start-up errors."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import httpx
import pytest
from spans import make_run, request_of, span_count

OTLP_FILE = sorted((Path(__file__).resolve().parent / "fixtures").glob("*.json"))[0]

PB = {"Content-Type": "application/x-protobuf"}


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


def metric(server, name: str) -> float:
    return sum(value for key, value in server.metrics().items() if key.startswith(name))


def test_forward_to_a_second_collector_and_survive_a_dead_upstream(start_collector, free_tcp_port):
    upstream = start_collector(token="up", wait=False)
    dead = f"http://127.0.0.1:{free_tcp_port()}"
    front = start_collector(
        "--forward-to", upstream.url, env={"LOOPSIGHT_FORWARD_HEADERS": "Authorization=Bearer up"}, wait=False
    )
    lonely = start_collector("--forward-to", dead, wait=False)
    for server in (upstream, front, lonely):
        server.wait_healthy()

    runs = [make_run(tools=2, agent=f"fwd{i}") for i in range(3)]
    for spans in runs:
        assert (
            httpx.post(
                front.traces_url, content=request_of(spans).SerializeToString(), headers=PB, timeout=30
            ).status_code
            == 200
        )

    def upstream_runs():
        listed = httpx.get(upstream.url + "/api/v1/runs", headers=upstream.headers, timeout=30).json()["runs"]
        return listed if len(listed) == 3 else None

    listed = wait_for(upstream_runs)
    assert {r["agent"] for r in listed} == {"fwd0", "fwd1", "fwd2"}
    assert all(r["tool_calls"] == 2 for r in listed)
    assert metric(front, 'loopsight_forward_batches_total{outcome="sent"}') == 3

    # The upstream is down: ingest answers as fast as ever and keeps the spans.
    started = time.monotonic()
    for spans in runs:
        assert (
            httpx.post(
                lonely.traces_url, content=request_of(spans).SerializeToString(), headers=PB, timeout=30
            ).status_code
            == 200
        )
    assert time.monotonic() - started < 10
    assert len(httpx.get(lonely.url + "/api/v1/runs", timeout=30).json()["runs"]) == 3
    wait_for(lambda: metric(lonely, "loopsight_forward_retries_total") >= 1)


def test_collectors_forwarding_to_each_other_forward_a_request_once_each(start_collector, free_tcp_port):
    a_port, b_port = free_tcp_port(), free_tcp_port()
    a = start_collector("--forward-to", f"http://127.0.0.1:{b_port}", http_port=a_port, wait=False)
    b = start_collector("--forward-to", f"http://127.0.0.1:{a_port}", http_port=b_port, wait=False)
    for server in (a, b):
        server.wait_healthy()
    spans = make_run(tools=2, agent="round")
    assert (
        httpx.post(a.traces_url, content=request_of(spans).SerializeToString(), headers=PB, timeout=30).status_code
        == 200
    )
    sent = 'loopsight_forward_batches_total{outcome="sent"}'
    wait_for(lambda: metric(b, sent) == 1 or None)
    time.sleep(2)  # a loop would have sent dozens by now (it did: ~90 a second)
    assert (metric(a, sent), metric(b, sent)) == (1, 1)
    assert metric(a, "loopsight_spans_duplicate_total") == len(spans)  # came back once, stored once
    for server in (a, b):
        assert len(httpx.get(server.url + "/api/v1/runs", timeout=30).json()["runs"]) == 1


def test_retention_deletes_old_spans_in_the_background(start_collector):
    server = start_collector("--retention", "30d", env={"LOOPSIGHT_RETENTION_INTERVAL": "0.5"})
    old = make_run(tools=3, agent="old", start_ns=time.time_ns() - 40 * 86400 * 10**9)
    fresh = make_run(tools=3, agent="fresh")
    assert (
        httpx.post(
            server.traces_url, content=request_of(old + fresh).SerializeToString(), headers=PB, timeout=30
        ).status_code
        == 200
    )
    wait_for(lambda: metric(server, "loopsight_retention_deleted_spans_total") >= 5)
    # ingest keeps going while retention runs
    assert (
        httpx.post(
            server.traces_url, content=request_of(make_run(agent="later")).SerializeToString(), headers=PB, timeout=30
        ).status_code
        == 200
    )
    agents = {r["agent"] for r in httpx.get(server.url + "/api/v1/runs", timeout=30).json()["runs"]}
    assert agents == {"fresh", "later"}
    server.stop()
    assert span_count(server.db_path) == 5 + 4


def test_retention_on_clickhouse_deletes_old_spans_and_runs(start_collector, tmp_path):
    """Every pass failed on ClickHouse (the DuckDB statement's rowid): nothing was ever deleted."""
    pytest.importorskip("chdb")
    server = start_collector(
        "--retention", "30d", "--store", f"chdb://{tmp_path / 'ch'}", env={"LOOPSIGHT_RETENTION_INTERVAL": "0.5"}
    )
    old = make_run(tools=3, agent="old", start_ns=time.time_ns() - 40 * 86400 * 10**9)
    fresh = make_run(tools=3, agent="fresh")
    answer = httpx.post(server.traces_url, content=request_of(old + fresh).SerializeToString(), headers=PB, timeout=30)
    assert answer.status_code == 200
    wait_for(lambda: metric(server, "loopsight_retention_deleted_spans_total") >= 5)
    runs = httpx.get(server.url + "/api/v1/runs", params={"since": "-60d"}, timeout=30).json()["runs"]
    assert {r["agent"] for r in runs} == {"fresh"}
    assert "retention pass failed" not in server.log()
    # the derive passes are counted on ClickHouse too (docs/api.md); only the commit gauge is DuckDB's
    assert metric(server, "loopsight_derive_passes_total") >= 1
    assert metric(server, "loopsight_derive_seconds_total") > 0
    assert metric(server, "loopsight_derive_set_aside_traces_total") == 0


def start_cli(*args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPSIGHT_")}
    return subprocess.Popen(
        [sys.executable, "-m", "loopsight", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def finish(process: subprocess.Popen[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    stdout, stderr = process.communicate(timeout=timeout)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return finish(start_cli(*args), timeout)


def assert_clean_failure(result: subprocess.CompletedProcess[str], needle: str) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert needle in output, output
    assert "Traceback" not in output, output


def test_clear_messages_when_it_cannot_start(collector_server, tmp_path, free_tcp_port):
    not_a_db = tmp_path / "notes.duckdb"
    not_a_db.write_text("hello, this is not a database\n" * 1000)
    json_file = tmp_path / "notes.json"  # DuckDB 2 opens a .json file as a table of its own
    json_file.write_text('{"note": "not a database"}\n')
    damaged = tmp_path / "damaged.duckdb"  # a real DuckDB file whose blocks fail their checksums
    with duckdb.connect(str(damaged)) as con:
        con.execute("CREATE TABLE t AS SELECT range AS i, range::VARCHAR AS s FROM range(200000)")
    with damaged.open("r+b") as f:  # every block after the headers, the catalog's included
        f.seek(12288)
        f.write(b"\xff" * (damaged.stat().st_size - 12288))
    foreign = tmp_path / "shop.duckdb"  # another program's database: refused, never added to
    with duckdb.connect(str(foreign)) as con:
        con.execute("CREATE TABLE orders AS SELECT 1 AS id")
    free = ["--http-port", str(free_tcp_port()), "--grpc-port", str(free_tcp_port())]
    cases = {  # each fails before binding anything, so they can share the free ports
        "locked by another process": ["--db", collector_server.db_path],
        f"cannot listen on 127.0.0.1:{collector_server.http_port}": [
            "--db",
            str(tmp_path / "a.duckdb"),
            "--http-port",
            str(collector_server.http_port),
        ],
        "does not exist": ["--db", str(tmp_path / "nope" / "x.duckdb")],
        "not a DuckDB database": ["--db", str(not_a_db)],
        "(or is damaged)": ["--db", str(damaged)],
        "is empty": ["--db", ""],
        "printable ASCII": ["--db", str(tmp_path / "h.duckdb"), "--token", "s\u00fcper-secret"],
        "<= 86400": ["--db", str(tmp_path / "i.duckdb"), "--alert-interval", "1e10"],
        "not a duration": ["--db", str(tmp_path / "b.duckdb"), "--retention", "soon"],
        "longer than 100 years": ["--db", str(tmp_path / "c.duckdb"), "--retention", "99999999999d"],
        "must be at least 1h": ["--db", str(tmp_path / "g.duckdb"), "--retention", "1ms"],
        "another program's tables (orders)": ["--db", str(foreign)],
        "has no DuckDB file header": ["--db", str(json_file)],
        "less than or equal to 65535": ["--db", str(tmp_path / "d.duckdb"), "--http-port", "99999"],
        "should be >= 0.1": ["--db", str(tmp_path / "e.duckdb"), "--alert-interval", "-1"],
        "own OTLP/HTTP address": ["--db", str(tmp_path / "f.duckdb"), "--forward-to", f"http://localhost:{free[1]}"],
    }
    running = {needle: start_cli("collector", *free, *args) for needle, args in cases.items()}
    for needle, process in running.items():
        result = finish(process)
        assert_clean_failure(result, needle)
        if needle != "locked by another process":  # a checksum error "in block at ..." is no lock
            assert "locked" not in result.stderr, result.stderr
    with duckdb.connect(str(foreign), read_only=True) as con:
        assert con.execute("SELECT table_name FROM duckdb_tables()").fetchall() == [("orders",)]
    for command, needle in (
        (["ingest", str(OTLP_FILE), "--db", str(foreign)], "no loopsight schema"),
        (["db", "upgrade", "--db", str(foreign)], "no loopsight schema"),
        (["runs", "--db", str(foreign)], "not a loopsight database"),
    ):
        assert_clean_failure(run_cli(*command), needle)
    with duckdb.connect(str(foreign), read_only=True) as con:
        assert con.execute("SELECT table_name FROM duckdb_tables()").fetchall() == [("orders",)]

    if os.geteuid() != 0:  # root writes anywhere
        read_only = tmp_path / "ro"
        read_only.mkdir(mode=0o500)
        result = run_cli(
            "collector", "--db", str(read_only / "x.duckdb"), "--http-port", free[0], "--grpc-port", free[1]
        )
        assert_clean_failure(result, "not writable")


def test_sigterm_drains_and_exits_zero(start_collector):
    server = start_collector()
    body = request_of(make_run(tools=5)).SerializeToString()
    assert httpx.post(server.traces_url, content=body, headers=PB, timeout=30).status_code == 200
    assert server.stop() == 0
    log = server.log()
    assert '"event": "stopped"' in log and "Traceback" not in log
    assert span_count(server.db_path) == 7


def test_port_check_names_the_grpc_port(collector_server, tmp_path, free_tcp_port):
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        result = run_cli(
            "collector",
            "--db",
            str(tmp_path / "g.duckdb"),
            "--http-port",
            str(free_tcp_port()),
            "--grpc-port",
            str(port),
        )
    assert_clean_failure(result, "OTLP/gRPC")


def test_every_read_command_refuses_a_window_that_ends_before_it_begins(tmp_path):
    db = str(tmp_path / "any.duckdb")  # the window is read before the store is opened
    for command in ("runs", "budgets"):  # budgets printed "no runs in the window" and exited 0
        assert_clean_failure(
            run_cli(command, "--db", db, "--since", "-1m", "--until", "-2h"), "--since must be before --until"
        )


@pytest.mark.parametrize(
    ("blocked", "args", "extra"),
    [
        ("duckdb", ["runs", "--collector", "http://127.0.0.1:9"], "collector"),
        ("uvicorn", ["collector", "--db", "x.duckdb"], "collector"),
        ("pyarrow", ["ingest", "--collector", "http://127.0.0.1:9", "x.jsonl"], "collector"),
    ],
)
def test_a_command_whose_extra_is_not_installed_says_which_to_install(tmp_path, blocked, args, extra):
    """In a base install (``pip install loopsight``) these commands ended in a 13-19 frame
    ModuleNotFoundError; the package is made missing here as it is there (``sys.modules[name] = None``)."""
    code = f"import sys; sys.modules[{blocked!r}] = None; sys.argv = ['loopsight', *{args!r}]; from loopsight.cli import main; main()"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPSIGHT_")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert f"needs the {extra} extra (no module '{blocked}'): pip install 'loopsight[{extra}]'" in output, output
    assert "Traceback" not in output, output


def test_an_ipv6_address_is_written_in_brackets(tmp_path, free_tcp_port):
    try:
        blocker = socket.socket(socket.AF_INET6)
        blocker.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    with blocker:
        blocker.listen()
        port = blocker.getsockname()[1]
        args = ["--db", str(tmp_path / "v6.duckdb"), "--host", "::1", "--grpc-port", str(free_tcp_port())]
        result = run_cli("collector", *args, "--http-port", str(port))
    assert_clean_failure(result, f"cannot listen on [::1]:{port} for OTLP/HTTP")
