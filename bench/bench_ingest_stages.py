"""Where in-process ingest spends its time, stage by stage, per span: OTLP decode and
``prepare`` (normalize + the feature pass + Arrow) as CPU of the calling thread; the store's
commits (INSERT, dedup, run resolution) and derive passes as the wall time the store records
(``StoreStats``); the store's threads' CPU as the rest of the process's CPU. Rounds in one
process, so round 0 is the one with cold caches (word and text caches of the feature pass).

    .venv/bin/python bench/bench_ingest_stages.py --load-tool bench/load_with_content.py
    PYTHONPATH=TREE .venv/bin/python bench/bench_ingest_stages.py --load-tool bench/load_with_content.py
    # TREE: a revision laid out by bench_ingest_ab.baseline_tree
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from bench_ingest import Store, _load_word_vectors, load_tool, own_cpu_seconds, prepare, submit
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def one_round(requests: list[bytes], total: int, workdir: Path) -> dict[str, float]:
    store = Store.open(str(workdir / f"stages-{time.monotonic_ns()}.duckdb"))
    decode = normalize = 0.0
    cpu = own_cpu_seconds()
    futures = []
    for body in requests:
        started = time.thread_time()
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        parsed = time.thread_time()
        table = prepare(request).table
        decode += parsed - started
        normalize += time.thread_time() - parsed
        futures = submit(store, table, futures)
    for future in futures:
        future.result()
    store.reader().close()
    cpu = own_cpu_seconds() - cpu
    stats = store.stats
    store.close()
    per_span = 1e6 / total
    return {
        "decode_cpu_us": decode * per_span,
        "prepare_cpu_us": normalize * per_span,
        "commit_wall_us": stats.commit_seconds_sum * per_span,
        "derive_wall_us": getattr(stats, "derive_seconds_sum", float("nan")) * per_span,
        "derive_passes": getattr(stats, "derive_passes", -1),
        "store_threads_cpu_us": (cpu - decode - normalize) * per_span,
        "process_cpu_us": cpu * per_span,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load-tool", default="/work/shared/tools/otlp_load.py")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    requests, total = load_tool(args.load_tool).build_requests(args.runs)
    _load_word_vectors()
    workdir = Path(tempfile.mkdtemp(prefix="bench-stages-"))
    rounds = [one_round(requests, total, workdir) for _ in range(args.rounds)]
    medians = {k: round(statistics.median(r[k] for r in rounds), 1) for k in rounds[0]}
    print(json.dumps({"spans": total, "round_0": {k: round(v, 1) for k, v in rounds[0].items()}, "median": medians}))


if __name__ == "__main__":
    main()
