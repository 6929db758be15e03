"""Collector ingest benchmark: end-to-end OTLP/HTTP vs the in-process limit, RSS and API
latency with a million spans, and the same load into Arize Phoenix.

    .venv/bin/python bench/bench_ingest.py                      # throughput, 3 alternating rounds
    .venv/bin/python bench/bench_ingest.py --workers 2 16       # end-to-end with 2 and with 16 senders
    .venv/bin/python bench/bench_ingest.py --million            # + RSS during 1M spans, API latency
    .venv/bin/python bench/bench_ingest.py --phoenix /tmp/phoenixvenv   # + Phoenix on the same load

Load: ``/work/shared/tools/otlp_load.py`` (synthetic agent runs, ~512 spans per protobuf
request, closed-loop sender threads (``--workers``, one end-to-end figure per count: a
sender waits for its answer before sending again, like an SDK exporter), 503s retried).
"Committed" means counted by the collector's ``loopsight_spans_stored_total`` (spans in the
DuckDB file), not acknowledged, and queryable: the clock stops after one ``/api/v1/runs``
answer, which waits for the derived tables to cover every span (``Store.reader``); spans per
commit come from ``loopsight_commit_seconds_count``. In-process = decode + normalize + Arrow
+ the same Store (group commit, dedup, run resolution, derivation, read once at the end), no
HTTP. Beside each rate, the CPU time (user + system, every thread) it cost per span: the
collector process end to end, this process in-process; on a shared machine it moves less
than the rates do. Prints one JSON object with medians and ratios.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

try:
    from loopsight.ingest.pipeline import prepare
    from loopsight.stores import QueueFull
    from loopsight.stores.duckdb_store import Store
except ImportError:  # a baseline tree from before the ingest/stores layers (bench_ingest_ab.py)
    from loopsight.collector.pipeline import prepare  # type: ignore[no-redef]
    from loopsight.collector.store import QueueFull, Store  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent


def load_tool(path: str):
    spec = importlib.util.spec_from_file_location("otlp_load", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _load_word_vectors() -> None:
    """Load the argument features' word vectors before the clock starts, as the collector does at
    start-up (a revision without them has nothing to load)."""
    try:
        from loopsight.ingest.embedding import default_model
    except ImportError:
        return
    default_model()


def submit(store: Store, table, futures: list) -> list:
    """Submit ``table`` to ``store``, waiting for the oldest commits while its queue is full;
    the futures not yet done, the new one last."""
    while True:
        try:
            futures.append(store.submit(table))
            return futures
        except QueueFull:
            futures[0].result()
            futures = [f for f in futures if not f.done()]


def in_process(requests: list[bytes], total: int, workdir: Path) -> tuple[float, float]:
    """Spans per second through decode + normalize + Arrow + Store commit, no HTTP, and the
    CPU microseconds per span it took."""
    db = workdir / f"inproc-{time.monotonic_ns()}.duckdb"
    store = Store.open(str(db))
    _load_word_vectors()
    cpu = own_cpu_seconds()
    started = time.perf_counter()
    futures = []
    for body in requests:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        futures = submit(store, prepare(request).table, futures)
    for future in futures:
        future.result()
    store.reader().close()  # the derived tables are current once read: include that wait
    elapsed = time.perf_counter() - started
    cpu = own_cpu_seconds() - cpu
    stored = store.stats.rows_committed
    store.close()
    assert stored == total, (stored, total)
    return total / elapsed, cpu / total * 1e6


class Collector:
    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.db = workdir / f"collector-{self.port}.duckdb"
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(workdir / f"collector-{self.port}.log", "wb")
        # -P: the working directory's loopsight/ must not shadow a --baseline tree on PYTHONPATH
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-P",
                "-m",
                "loopsight",
                "collector",
                "--db",
                str(self.db),
                "--http-port",
                str(self.port),
                "--grpc-port",
                "0",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    # The first scrape computes the agent gauges, cached for --alert-interval (30 s):
                    # on the empty store here, not inside a timed window a few seconds long.
                    self.metric("loopsight_spans_stored_total")
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("collector did not start")

    def metric(self, name: str) -> int:
        text = httpx.get(self.url + "/metrics", timeout=30).text
        return int(float(next(line for line in text.splitlines() if line.startswith(name + " ")).split()[-1]))

    def stored(self) -> int:
        return self.metric("loopsight_spans_stored_total")

    def cpu_seconds(self) -> float:
        """User + system CPU time of the collector process so far, all threads."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(120)
        self.log.close()


def end_to_end(tool, requests: list[bytes], total: int, workdir: Path, workers: int) -> tuple[float, float, float]:
    """Committed spans per second through OTLP/HTTP, the mean spans per commit and the
    collector's CPU microseconds per span."""
    collector = Collector(workdir)
    try:
        cpu = collector.cpu_seconds()
        started = time.perf_counter()
        codes = tool.send(collector.url + "/v1/traces", requests, workers=workers)
        while collector.stored() < total:
            time.sleep(0.02)
        httpx.get(
            collector.url + "/api/v1/runs?limit=1", timeout=60
        ).raise_for_status()  # queryable: derived tables current
        elapsed = time.perf_counter() - started
        cpu = collector.cpu_seconds() - cpu
        assert set(codes) <= {200, 503}, codes
        return total / elapsed, total / max(collector.metric("loopsight_commit_seconds_count"), 1), cpu / total * 1e6
    finally:
        collector.stop()


def million(tool, n_runs: int, workdir: Path, workers: int) -> dict:
    """RSS while ~1M spans stream in, then query latency on the full store."""
    collector = Collector(workdir)
    peak = [0.0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], collector.rss_mb())
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    total = 0
    started = time.perf_counter()
    chunk = 8000
    trace_ids: list[str] = []
    for first in range(0, n_runs, chunk):
        requests, count = tool.build_requests(min(chunk, n_runs - first), seed=first + 1)
        sample_request = ExportTraceServiceRequest.FromString(requests[0])
        trace_ids.append(sample_request.resource_spans[0].scope_spans[0].spans[-1].trace_id.hex())
        tool.send(collector.url + "/v1/traces", requests, workers=workers)
        total += count
    while collector.stored() < total:
        time.sleep(0.05)
    httpx.get(
        collector.url + "/api/v1/runs?limit=1", timeout=60
    ).raise_for_status()  # queryable: derived tables current
    elapsed = time.perf_counter() - started
    done.set()
    sampler.join()
    latencies: dict[str, list[float]] = {"runs_limit_50": [], "run_detail": []}
    with httpx.Client(base_url=collector.url, timeout=60) as client:
        client.get("/api/v1/runs?limit=50")
        for i in range(15):
            t = time.perf_counter()
            assert client.get("/api/v1/runs?limit=50").status_code == 200
            latencies["runs_limit_50"].append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            response = client.get(f"/api/v1/runs/{trace_ids[i % len(trace_ids)]}")
            latencies["run_detail"].append((time.perf_counter() - t) * 1000)
            assert response.status_code == 200 and response.json()["spans"], response.text[:200]
    rss_after = collector.rss_mb()
    size_mb = collector.db.stat().st_size / 2**20
    collector.stop()
    return {
        "spans": total,
        "spans_per_s": round(total / elapsed),
        "peak_rss_mb": round(peak[0]),
        "rss_after_queries_mb": round(rss_after),
        "db_mb": round(size_mb),
        **{f"{k}_ms_median": round(statistics.median(v), 1) for k, v in latencies.items()},
        **{f"{k}_ms_max": round(max(v), 1) for k, v in latencies.items()},
    }


def phoenix(venv: str, tool, requests: list[bytes], total: int, workdir: Path, workers: int) -> dict:
    """The same load into ``phoenix serve``; committed = rows in its SQLite ``spans`` table."""
    port, grpc_port = free_port(), free_port()
    home = workdir / "phoenix"
    home.mkdir()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(home),
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "DO_NOT_TRACK": "1",
    }
    log = open(workdir / "phoenix.log", "wb")
    process = subprocess.Popen([f"{venv}/bin/phoenix", "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            raise RuntimeError("phoenix did not start")
        db = next(home.glob("*.db"))

        def committed() -> int:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
            try:
                return con.execute("SELECT count(*) FROM spans").fetchone()[0]
            except sqlite3.OperationalError:
                return 0
            finally:
                con.close()

        started = time.perf_counter()
        codes = tool.send(f"http://127.0.0.1:{port}/v1/traces", requests, workers=workers)
        acked = time.perf_counter() - started
        last, last_change = -1, time.perf_counter()
        while True:
            count = committed()
            if count >= total:
                break
            if count != last:
                last, last_change = count, time.perf_counter()
            elif time.perf_counter() - last_change > 30:
                break
            time.sleep(0.1)
        elapsed = time.perf_counter() - started
        return {
            "spans_sent": total,
            "spans_committed": count,
            "acked_s": round(acked, 2),
            "committed_s": round(elapsed, 2),
            "committed_spans_per_s": round(count / elapsed),
            "codes": codes,
        }
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load-tool", default="/work/shared/tools/otlp_load.py")
    parser.add_argument("--runs", type=int, default=2000, help="agent runs per throughput round (~13 spans each)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--workers", type=int, nargs="+", default=[2], help="sender threads; one end-to-end figure per count"
    )
    parser.add_argument("--million", action="store_true", help="also stream ~1M spans: RSS and API latency")
    parser.add_argument("--million-runs", type=int, default=77_000)
    parser.add_argument("--phoenix", metavar="VENV", help="also load Arize Phoenix installed in VENV")
    args = parser.parse_args()

    tool = load_tool(args.load_tool)
    requests, total = tool.build_requests(args.runs)
    workdir = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    result: dict = {
        "spans_per_round": total,
        "requests_per_round": len(requests),
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg()[0],
    }
    try:
        inproc: list[float] = []
        inproc_cpu: list[float] = []
        e2e: dict[int, list[float]] = {w: [] for w in args.workers}
        per_commit: dict[int, list[float]] = {w: [] for w in args.workers}
        e2e_cpu: dict[int, list[float]] = {w: [] for w in args.workers}
        for _ in range(args.rounds):  # alternate so both see the same machine noise
            rate, cpu = in_process(requests, total, workdir)
            inproc.append(rate)
            inproc_cpu.append(cpu)
            for workers in args.workers:
                rate, spans_per_commit, cpu = end_to_end(tool, requests, total, workdir, workers)
                e2e[workers].append(rate)
                per_commit[workers].append(spans_per_commit)
                e2e_cpu[workers].append(cpu)
        result["in_process_spans_per_s"] = [round(x) for x in inproc]
        result["in_process_median"] = round(statistics.median(inproc))
        result["in_process_cpu_us_per_span"] = round(statistics.median(inproc_cpu), 1)
        result["end_to_end"] = {
            str(w): {
                "spans_per_s": [round(x) for x in e2e[w]],
                "median": round(statistics.median(e2e[w])),
                "spans_per_commit": round(statistics.median(per_commit[w])),
                "collector_cpu_us_per_span": round(statistics.median(e2e_cpu[w]), 1),
                "ratio_over_in_process": round(statistics.median(e2e[w]) / statistics.median(inproc), 2),
            }
            for w in args.workers
        }
        result["end_to_end_median"] = result["end_to_end"][str(args.workers[0])]["median"]
        result["ratio_end_to_end_over_in_process"] = result["end_to_end"][str(args.workers[0])]["ratio_over_in_process"]
        if args.phoenix:
            result["phoenix"] = phoenix(args.phoenix, tool, requests, total, workdir, args.workers[0])
            result["loopsight_over_phoenix_committed"] = round(
                result["end_to_end_median"] / max(result["phoenix"]["committed_spans_per_s"], 1), 1
            )
        if args.million:
            result["million"] = million(tool, args.million_runs, workdir, args.workers[-1])
        result["loadavg_end"] = os.getloadavg()[0]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
