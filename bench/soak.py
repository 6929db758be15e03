"""Soak: overload the collector at 2x its measured sustained throughput with a retrying client.

    .venv/bin/python bench/soak.py                      # 20 s measure + 60 s at 2x + catch-up
    .venv/bin/python bench/soak.py --seconds 30 --factor 3

It starts its own ``loopsight collector`` on free loopback ports and a fresh DuckDB file, then

1. measures the sustained rate: closed-loop workers for ``--measure-seconds``, spans acknowledged/s;
2. offers ``--factor`` x that rate for ``--seconds`` (paced, open loop), every request retried on
   503/429/connection errors after ``Retry-After`` (like the OTel exporters);
3. stops offering and times how long the backlog takes to drain (catch-up);
4. stops the collector (SIGTERM), opens the file and counts what is stored.

Throughout it samples the collector's RSS and write-queue depth. Every request carries unique
trace ids (an 8-byte marker in each trace id is replaced per send), so stored == sent proves no
loss and no duplication. Prints a JSON line and a Markdown table for docs/reliability.md.
Request bodies come from /work/shared/tools/otlp_load.py (synthetic agent loops, ~512 spans each).
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import queue
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

LOAD_TOOL = Path("/work/shared/tools/otlp_load.py")
MARKER = b"\xfeSOAK\x00\x01\xfd"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def build_pool(runs: int) -> tuple[list[bytes], list[int]]:
    """Request bodies whose trace ids all start with MARKER, and their span counts."""
    spec = importlib.util.spec_from_file_location("otlp_load", LOAD_TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    bodies, _ = module.build_requests(runs)
    pool, counts = [], []
    for body in bodies:
        request = ExportTraceServiceRequest.FromString(body)
        n = 0
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    span.trace_id = MARKER + span.trace_id[8:]
                    n += 1
        pool.append(request.SerializeToString())
        counts.append(n)
    return pool, counts


@dataclass
class Stats:
    """Counters shared by the client threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    generated_requests: int = 0
    generated_spans: int = 0
    acked_requests: int = 0
    acked_spans: int = 0
    attempts: int = 0
    codes: dict[str, int] = field(default_factory=dict)
    retry_after_missing: int = 0
    latencies: list[float] = field(default_factory=list)

    def code(self, name: str) -> None:
        with self.lock:
            self.codes[name] = self.codes.get(name, 0) + 1


class Client:
    """Worker threads posting queued bodies, retrying 503/429/connection errors after Retry-After."""

    def __init__(self, port: int, workers: int, stats: Stats) -> None:
        self.port = port
        self.stats = stats
        self.jobs: queue.Queue[tuple[bytes, int] | None] = queue.Queue()
        self.threads = [threading.Thread(target=self._work, daemon=True) for _ in range(workers)]
        for thread in self.threads:
            thread.start()

    def _post(self, conn: http.client.HTTPConnection, body: bytes) -> tuple[int, str | None]:
        conn.request("POST", "/v1/traces", body=body, headers={"Content-Type": "application/x-protobuf"})
        response = conn.getresponse()
        response.read()
        return response.status, response.getheader("Retry-After")

    def _work(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        while True:
            job = self.jobs.get()
            if job is None:
                return
            body, spans = job
            backoff = 0.5
            while True:
                started = time.perf_counter()
                try:
                    status, retry_after = self._post(conn, body)
                except (OSError, http.client.HTTPException):
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
                    self.stats.code("conn_error")
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 8)
                    continue
                with self.stats.lock:
                    self.stats.attempts += 1
                    self.stats.latencies.append(time.perf_counter() - started)
                self.stats.code(str(status))
                if status == 200:
                    with self.stats.lock:
                        self.stats.acked_requests += 1
                        self.stats.acked_spans += spans
                    break
                if status in (429, 502, 503, 504):
                    if retry_after is None:
                        with self.stats.lock:
                            self.stats.retry_after_missing += 1
                    time.sleep(float(retry_after) if retry_after else backoff)
                    backoff = min(backoff * 2, 8)
                    continue
                raise SystemExit(f"collector answered {status}: not retryable, the soak is invalid")

    def stop(self) -> None:
        for _ in self.threads:
            self.jobs.put(None)
        for thread in self.threads:
            thread.join()


class Sampler:
    """Samples the collector's memory (/proc: RSS, anonymous RSS) every 0.25 s and its /metrics
    (write queue, bytes in flight, DuckDB's own memory) every 0.5 s, in the background."""

    GAUGES: ClassVar[dict[str, str]] = {
        "loopsight_write_queue_spans": "queue_spans",
        "loopsight_inflight_bytes": "inflight_mb",
        "loopsight_duckdb_memory_bytes": "duckdb_mb",
    }

    def __init__(self, pid: int, port: int, previous: Sampler | None = None) -> None:
        self.pid, self.port = pid, port
        self.series: dict[str, list[tuple[float, float]]] = (
            previous.series
            if previous
            else {name: [] for name in ("rss_mb", "anon_mb", "queue_spans", "inflight_mb", "duckdb_mb")}
        )
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def rss_mb(self) -> list[tuple[float, float]]:
        return self.series["rss_mb"]

    def peak(self, name: str, since: float = 0.0) -> float | None:
        values = [v for t, v in self.series[name] if t >= since]
        return round(max(values), 1) if values else None

    def _run(self) -> None:
        tick = 0
        while not self.stop_event.wait(0.25):
            now = time.monotonic()
            try:
                for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        self.series["rss_mb"].append((now, int(line.split()[1]) / 1024))
                    elif line.startswith("RssAnon:"):
                        self.series["anon_mb"].append((now, int(line.split()[1]) / 1024))
            except OSError:
                return
            tick += 1
            if tick % 2 == 0:
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                    conn.request("GET", "/metrics")
                    text = conn.getresponse().read().decode()
                    conn.close()
                except (OSError, http.client.HTTPException, ValueError):
                    continue
                sums: dict[str, float] = {}
                for line in text.splitlines():
                    name = line.split("{", 1)[0].split(" ", 1)[0]
                    if name in self.GAUGES:
                        sums[name] = sums.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
                for name, value in sums.items():
                    key = self.GAUGES[name]
                    self.series[key].append((now, value / 2**20 if key.endswith("_mb") else value))

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join()


def unique(body: bytes, serial: int) -> bytes:
    return body.replace(MARKER, serial.to_bytes(8, "big"))


def run(args: argparse.Namespace) -> dict:
    pool, counts = build_pool(args.runs)
    workdir = Path(tempfile.mkdtemp(prefix="loopsight-soak-"))
    db = workdir / "soak.duckdb"
    http_port, grpc_port = _free_port(), _free_port()
    log = open(workdir / "collector.log", "wb")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    env.update(item.split("=", 1) for item in args.collector_env)
    command = [
        sys.executable,
        "-m",
        "loopsight",
        "collector",
        "--db",
        str(db),
        "--http-port",
        str(http_port),
        "--grpc-port",
        str(grpc_port),
        *args.collector_arg,
    ]

    def launch() -> subprocess.Popen:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 120
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=2)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    return process
            except OSError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit(f"collector did not start; see {workdir}/collector.log")
            time.sleep(0.1)

    collector = launch()
    sampler = Sampler(collector.pid, http_port)
    serial = 0

    # 1. sustained rate, closed loop (skipped with --offered-rate: runs compared side by side get the same load)
    measure = Stats()
    client = Client(http_port, args.measure_workers, measure)
    started = time.monotonic()
    while not args.offered_rate and time.monotonic() - started < args.measure_seconds:
        while client.jobs.qsize() < args.measure_workers * 2:
            i = serial % len(pool)
            serial += 1
            client.jobs.put((unique(pool[i], serial), counts[i]))
            measure.generated_requests += 1
            measure.generated_spans += counts[i]
        time.sleep(0.005)
    client.stop()  # drains what is queued
    measured_s = time.monotonic() - started
    sustained = args.offered_rate / args.factor if args.offered_rate else measure.acked_spans / measured_s

    # 2. offered at factor x sustained for args.seconds, paced
    overload = Stats()
    client = Client(http_port, args.workers, overload)
    target = sustained * args.factor
    avg_spans = sum(counts) / len(counts)
    interval = avg_spans / target
    started = time.monotonic()
    next_due = started
    kill = {"done": False, "restart_s": None, "replay_peak_mb": None, "wal_mb": None}
    while time.monotonic() - started < args.seconds:
        now = time.monotonic()
        if args.kill_at and not kill["done"] and now - started >= args.kill_at:
            # kill -9 mid-overload: the WAL holds whatever was committed since the last checkpoint
            kill["done"] = True
            collector.send_signal(signal.SIGKILL)
            collector.wait()
            wal = Path(f"{db}.wal")
            kill["wal_mb"] = round(wal.stat().st_size / 2**20, 1) if wal.exists() else 0.0
            sampler.stop()
            restart_began = time.monotonic()
            collector = launch()
            kill["restart_s"] = round(time.monotonic() - restart_began, 1)
            kill["replay_peak_mb"] = round(
                int(
                    next(
                        line.split()[1]
                        for line in Path(f"/proc/{collector.pid}/status").read_text().splitlines()
                        if line.startswith("VmHWM:")
                    )
                )
                / 1024,
                1,
            )
            sampler = Sampler(collector.pid, http_port, sampler)
            next_due = max(next_due, time.monotonic() - 1.0)  # offered rate resumes, no burst to make up
        while next_due <= now:
            i = serial % len(pool)
            serial += 1
            client.jobs.put((unique(pool[i], serial), counts[i]))
            overload.generated_requests += 1
            overload.generated_spans += counts[i]
            next_due += interval
        time.sleep(min(0.01, max(0.0, next_due - time.monotonic())))
    offered_s = time.monotonic() - started
    acked_at_stop = overload.acked_spans
    rss_during = [mb for t, mb in sampler.rss_mb if started <= t]

    # 3. catch-up: no new requests; the retrying client drains its backlog
    drain_started = time.monotonic()
    client.stop()
    catch_up_s = time.monotonic() - drain_started
    total_s = time.monotonic() - started
    sampler.stop()

    # 4. stop and count
    collector.send_signal(signal.SIGTERM)
    exit_code = collector.wait(timeout=120)
    log.close()
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    stored, distinct = con.execute('SELECT count(*), count(DISTINCT ("TraceId", "SpanId")) FROM spans').fetchone()
    con.close()
    sent = measure.generated_spans + overload.generated_spans
    lat = sorted(overload.latencies)
    result = {
        "sustained_spans_per_s": round(sustained),
        "factor": args.factor,
        "offered_spans_per_s": round(overload.generated_spans / offered_s),
        "acked_spans_per_s_during_overload": round(acked_at_stop / offered_s),
        "acked_spans_per_s_overall": round(overload.acked_spans / total_s),
        "overload_seconds": round(offered_s, 1),
        "catch_up_seconds": round(catch_up_s, 1),
        "backlog_at_stop_spans": overload.generated_spans - acked_at_stop,
        "status_codes": overload.codes,
        "503_share_of_attempts": round(overload.codes.get("503", 0) / max(1, overload.attempts), 3),
        "retry_after_missing": overload.retry_after_missing,
        "latency_p50_ms": round(statistics.median(lat) * 1000, 1) if lat else None,
        "latency_p99_ms": round(lat[int(len(lat) * 0.99) - 1] * 1000, 1) if lat else None,
        "rss_peak_mb": sampler.peak("rss_mb"),
        "rss_peak_during_overload_mb": round(max(rss_during), 1) if rss_during else None,
        "rss_end_mb": round(sampler.rss_mb[-1][1], 1),
        "rss_anon_peak_mb": sampler.peak("anon_mb"),
        "duckdb_memory_peak_mb": sampler.peak("duckdb_mb"),
        "inflight_peak_mb": sampler.peak("inflight_mb"),
        "write_queue_spans_max": sampler.peak("queue_spans"),
        "spans_sent": sent,
        "spans_stored": stored,
        "spans_distinct": distinct,
        "spans_lost": sent - distinct,
        "duplicates": stored - distinct,
        "collector_exit_code": exit_code,
        "collector_env": args.collector_env,
        "kill9_at_s": args.kill_at or None,
        "kill9_wal_mb": kill["wal_mb"],
        "kill9_restart_s": kill["restart_s"],
        "kill9_replay_peak_rss_mb": kill["replay_peak_mb"],
        "collector_args": args.collector_arg,
        "workdir": str(workdir),
    }
    (workdir / "samples.json").write_text(json.dumps({"started": started, **sampler.series}))
    return result


def markdown(result: dict) -> str:
    rows = [
        ("sustained throughput (measured first)", f"{result['sustained_spans_per_s']:,} spans/s"),
        (
            f"offered for {result['overload_seconds']} s ({result['factor']}x)",
            f"{result['offered_spans_per_s']:,} spans/s",
        ),
        ("acknowledged while overloaded", f"{result['acked_spans_per_s_during_overload']:,} spans/s"),
        ("answers", ", ".join(f"{k}: {v:,}" for k, v in sorted(result["status_codes"].items()))),
        ("503 without Retry-After", str(result["retry_after_missing"])),
        ("request latency p50 / p99", f"{result['latency_p50_ms']} / {result['latency_p99_ms']} ms"),
        ("collector RSS peak / at end", f"{result['rss_peak_mb']} / {result['rss_end_mb']} MB"),
        (
            "peaks: anonymous RSS / DuckDB's own / bodies in flight",
            f"{result['rss_anon_peak_mb']} / {result['duckdb_memory_peak_mb']} / {result['inflight_peak_mb']} MB",
        ),
        ("write queue max", f"{result['write_queue_spans_max']} spans"),
        ("client backlog when the load stopped", f"{result['backlog_at_stop_spans']:,} spans"),
        ("catch-up after the load stopped", f"{result['catch_up_seconds']} s"),
        *(
            [
                (
                    "kill -9 at / WAL size / restart took / restarted peak RSS",
                    f"{result['kill9_at_s']} s / {result['kill9_wal_mb']} MB / {result['kill9_restart_s']} s / "
                    f"{result['kill9_replay_peak_rss_mb']} MB",
                )
            ]
            if result.get("kill9_at_s")
            else []
        ),
        (
            "spans sent / stored / lost / duplicated",
            f"{result['spans_sent']:,} / {result['spans_distinct']:,} / {result['spans_lost']} / {result['duplicates']}",
        ),
    ]
    return "| | |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="overload duration")
    parser.add_argument("--measure-seconds", type=float, default=20.0, help="sustained-rate measurement")
    parser.add_argument("--factor", type=float, default=2.0, help="offered load / sustained rate")
    parser.add_argument(
        "--offered-rate",
        type=float,
        default=0.0,
        metavar="SPANS_PER_S",
        help="offer this rate instead of --factor x a measured one (no measuring phase)",
    )
    parser.add_argument(
        "--workers", type=int, default=64, help="client threads during the overload (a fleet of exporters)"
    )
    parser.add_argument(
        "--measure-workers", type=int, default=8, help="client threads while measuring (enough to saturate)"
    )
    parser.add_argument("--runs", type=int, default=3000, help="agent runs in the request pool")
    parser.add_argument(
        "--kill-at",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="kill -9 the collector this far into the overload and restart it on the same file",
    )
    parser.add_argument(
        "--collector-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment for the collector, e.g. LOOPSIGHT_MEMORY_LIMIT=128MB",
    )
    parser.add_argument(
        "--collector-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument for `loopsight collector`, e.g. --collector-arg=--memory-limit=384MB",
    )
    args = parser.parse_args()
    result = run(args)
    print(json.dumps(result))
    print(markdown(result))
    if result["spans_lost"] or result["duplicates"] or result["collector_exit_code"] != 0:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
