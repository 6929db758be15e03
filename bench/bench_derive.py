"""Ingest cost of the derived per-run tables: the in-process ingest of bench_ingest.py with the
writer's derivation (``loopsight.analytics.derive.refresh``) on and off, alternating rounds.

    .venv/bin/python bench/bench_derive.py --runs 2000 --rounds 5

"Off" replaces the writer's call with a no-op in this process only (the store is otherwise the
same: group commit, dedup, run resolution, step derivation). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_ingest  # noqa: E402

from loopsight.collector import store as store_module  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load-tool", default="/work/shared/tools/otlp_load.py")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    tool = bench_ingest.load_tool(args.load_tool)
    requests, total = tool.build_requests(args.runs)
    workdir = Path(tempfile.mkdtemp(prefix="bench-derive-"))
    derive = store_module.refresh_derived
    on, off = [], []
    try:
        for _ in range(args.rounds):
            store_module.refresh_derived = lambda con, since: None
            off.append(bench_ingest.in_process(requests, total, workdir))
            store_module.refresh_derived = derive
            on.append(bench_ingest.in_process(requests, total, workdir))
    finally:
        store_module.refresh_derived = derive
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps({
        "spans_per_round": total, "requests_per_round": len(requests), "loadavg": os.getloadavg()[0],
        "without_derive_spans_per_s": [round(x) for x in off], "with_derive_spans_per_s": [round(x) for x in on],
        "without_median": round(statistics.median(off)), "with_median": round(statistics.median(on)),
        "ratio_with_over_without": round(statistics.median(on) / statistics.median(off), 3),
    }))


if __name__ == "__main__":
    main()
