"""A quiet fleet: what the collector costs when requests trickle in, end to end.

Most sidecars do not see a flood but a steady trickle: a few processes whose batch
processors export small batches every so often. This starts a real collector, and
``--senders`` threads each POST one OTLP/HTTP protobuf request of ``--spans`` spans (the
synthetic runs of ``otlp_load.py``, re-cut), wait for the answer, sleep ``--gap-ms`` and
repeat, for ``--seconds``. It reports the collector's CPU as a share of one core and per
span, the acknowledgement latency (p50, p99) and the derive passes it ran.

With ``--baseline REV --files ...`` it alternates rounds with a collector whose ``--files``
come from ``REV`` (the package tree of ``bench_ingest_ab.py``), so both sides see the same
machine; ``--rounds`` pairs, medians reported.

    .venv/bin/python bench/bench_trickle.py --senders 2 --spans 64 --gap-ms 100 --seconds 15
    .venv/bin/python bench/bench_trickle.py --baseline 2f8378d --files collector/store.py --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ingest import Collector, load_tool
from bench_ingest_ab import baseline_tree


def small_requests(tool, runs: int, size: int) -> list[bytes]:
    """The generator's ~512-span requests cut into requests of ``size`` spans."""
    bodies, _ = tool.build_requests(runs)
    out = []
    for body in bodies:
        for resource_spans in ExportTraceServiceRequest.FromString(body).resource_spans:
            for scope_spans in resource_spans.scope_spans:
                spans = list(scope_spans.spans)
                for at in range(0, len(spans), size):
                    request = ExportTraceServiceRequest()
                    piece = request.resource_spans.add()
                    piece.resource.CopyFrom(resource_spans.resource)
                    scope = piece.scope_spans.add()
                    scope.scope.CopyFrom(scope_spans.scope)
                    scope.spans.extend(spans[at : at + size])
                    out.append(request.SerializeToString())
    return out


def metric(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def one_round(requests: list[bytes], senders: int, gap: float, seconds: float, workdir: Path) -> dict:
    collector = Collector(workdir)
    try:
        latencies: list[float] = []
        failures: list[int] = []
        lock = threading.Lock()
        stop = time.monotonic() + seconds
        cursor = iter(requests)

        def sender() -> None:
            with httpx.Client(timeout=30) as client:
                while time.monotonic() < stop:
                    with lock:
                        body = next(cursor, None)
                    if body is None:
                        return
                    started = time.perf_counter()
                    status = client.post(
                        collector.url + "/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf"}
                    ).status_code
                    with lock:
                        latencies.append(time.perf_counter() - started)
                        if status != 200:
                            failures.append(status)
                    time.sleep(gap)

        cpu = collector.cpu_seconds()
        started = time.perf_counter()
        threads = [threading.Thread(target=sender) for _ in range(senders)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        cpu = collector.cpu_seconds() - cpu
        text = httpx.get(collector.url + "/metrics", timeout=30).text
        stored = metric(text, "loopsight_spans_stored_total") or 0
        latencies.sort()
        return {
            "requests": len(latencies),
            "spans": int(stored),
            "non_200": len(failures),
            "cpu_share_of_a_core": round(cpu / elapsed, 3),
            "cpu_us_per_span": round(cpu / max(stored, 1) * 1e6, 1),
            "ack_p50_ms": round(latencies[len(latencies) // 2] * 1000, 1),
            "ack_p99_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000, 1),
            "derive_passes": metric(text, "loopsight_derive_passes_total"),  # None before this metric existed
        }
    finally:
        collector.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--load-tool", default="/work/shared/tools/otlp_load.py")
    parser.add_argument("--senders", type=int, default=2)
    parser.add_argument("--spans", type=int, default=64, help="spans per request")
    parser.add_argument("--gap-ms", type=float, default=100.0, help="pause of each sender after each answer")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline", help="git revision for the other side")
    parser.add_argument("--files", nargs="+", default=["collector/store.py"])
    args = parser.parse_args()
    tool = load_tool(args.load_tool)
    # Enough requests for every sender for the whole time (a run is ~13 spans), none reused.
    wanted = int(args.senders * args.seconds / (args.gap_ms / 1000 + 0.005)) + 1
    requests = small_requests(tool, max(200, wanted * args.spans // 13 + 100), args.spans)
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"loopsight-trickle-{os.getpid()}"
    workdir.mkdir(parents=True, exist_ok=True)
    sides = {"after": None}
    tree = None
    if args.baseline:
        tree = baseline_tree(args.baseline, args.files)
        sides = {"before": str(tree), "after": None}
    rounds: dict[str, list[dict]] = {side: [] for side in sides}
    try:
        for _ in range(args.rounds):
            for side, pythonpath in sides.items():
                saved = os.environ.get("PYTHONPATH")
                if pythonpath:
                    os.environ["PYTHONPATH"] = pythonpath  # the collector subprocess inherits it
                try:
                    rounds[side].append(one_round(requests, args.senders, args.gap_ms / 1000, args.seconds, workdir))
                finally:
                    if pythonpath:
                        if saved is None:
                            del os.environ["PYTHONPATH"]
                        else:
                            os.environ["PYTHONPATH"] = saved
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if tree is not None:
            shutil.rmtree(tree, ignore_errors=True)
    report: dict = {
        "senders": args.senders,
        "spans_per_request": args.spans,
        "gap_ms": args.gap_ms,
        "seconds": args.seconds,
        "baseline": args.baseline,
        "rounds": rounds,
    }
    for side, results in rounds.items():
        for key in ("cpu_share_of_a_core", "cpu_us_per_span", "ack_p50_ms", "ack_p99_ms", "spans"):
            report[f"{side}_{key}_median"] = statistics.median(r[key] for r in results)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
