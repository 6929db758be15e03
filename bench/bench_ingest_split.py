"""Where in-process ingest CPU goes, stage by stage, this checkout against an earlier revision.

The same requests as ``bench/bench_ingest.py`` (its ``--load-tool``), run one stage after the
other instead of overlapped, so each stage's CPU per span is its own: decode + normalize + Arrow
(``prepare``, main thread), the store's commits (the writer, waited for), and the derive pass that
makes the derived tables current (``reader()``). Each round is a fresh process (cold caches), the
two revisions alternated; ``--threads N`` opens the store with DuckDB ``threads=N`` on both sides.

    .venv/bin/python bench/bench_ingest_split.py --baseline 825a514 --rounds 5 \\
        --load-tool bench/load_with_content.py

Prints one JSON object: per side the median microseconds of CPU per span of each stage and in all,
and the ratios this checkout / baseline.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STAGES = ("prepare", "commit", "derive", "total")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def one_round(load_tool: str, runs: int, threads: int) -> dict[str, float]:
    """One side's stages in this process (``--round``), CPU microseconds per span."""
    sys.path.insert(0, str(HERE))
    import bench_ingest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    requests, total = bench_ingest.load_tool(load_tool).build_requests(runs)
    store = bench_ingest.Store.open(
        str(Path(tempfile.mkdtemp(prefix="bench-split-")) / "x.duckdb"), **({"threads": threads} if threads else {})
    )
    bench_ingest._load_word_vectors()
    marks = [_cpu()]
    tables = []
    for body in requests:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        tables.append(bench_ingest.prepare(request).table)
    marks.append(_cpu())
    futures: list = []
    for table in tables:
        futures = bench_ingest.submit(store, table, futures)
    for future in futures:
        future.result()
    marks.append(_cpu())
    store.reader().close()
    marks.append(_cpu())
    assert store.stats.rows_committed == total, (store.stats.rows_committed, total)
    store.close()
    per = [(b - a) / total * 1e6 for a, b in itertools.pairwise(marks)]
    return dict(zip(STAGES, [*per, sum(per)], strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="an earlier revision (git)")
    parser.add_argument("--load-tool", default="/work/shared/tools/otlp_load.py")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="DuckDB threads (0: its default)")
    parser.add_argument("--round", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.round:
        print(json.dumps(one_round(args.load_tool, args.runs, args.threads)))
        return
    from bench_ingest_ab import baseline_tree

    tree = baseline_tree(args.baseline, [])
    sides: dict[str, list[dict[str, float]]] = {"now": [], "baseline": []}
    command = [sys.executable, __file__, "--round", "--baseline", args.baseline, "--load-tool", args.load_tool]
    command += ["--runs", str(args.runs), "--threads", str(args.threads)]
    for _ in range(args.rounds):
        for side, path in (("now", ""), ("baseline", str(tree))):
            env = {**os.environ, "PYTHONPATH": path} if path else dict(os.environ)
            out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
            sides[side].append(json.loads(out.strip().splitlines()[-1]))
            time.sleep(1)
    medians = {
        side: {s: round(statistics.median(r[s] for r in rounds), 1) for s in STAGES} for side, rounds in sides.items()
    }
    print(
        json.dumps(
            {
                "baseline": args.baseline,
                "rounds": args.rounds,
                "threads": args.threads or "default",
                "loadavg": os.getloadavg()[0],
                "cpu_us_per_span": medians,
                "ratio_now_over_baseline": {s: round(medians["now"][s] / medians["baseline"][s], 2) for s in STAGES},
            }
        )
    )


if __name__ == "__main__":
    main()
