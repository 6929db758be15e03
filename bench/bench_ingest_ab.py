"""End-to-end and in-process ingest, this checkout against earlier versions of some files,
alternating rounds of ``bench/bench_ingest.py`` so both see the same machine noise.

    .venv/bin/python bench/bench_ingest_ab.py --baseline 6cad44b --rounds 3 \\
        --files ingest/normalize.py ingest/batch.py

The baseline is a copy of the package tree with ``--files`` taken from ``--baseline``
(``git show``), put first on ``PYTHONPATH`` (the collector subprocess inherits it).
Prints one JSON object: per-round figures, medians and the after/before ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("instrumentation", "react", "collector", "analytics", "alerts", "dashboard", "migrations", "stores")


def baseline_tree(revision: str, files: list[str]) -> Path:
    tree = Path(tempfile.mkdtemp(prefix="loopsight-baseline-"))
    shutil.copytree(ROOT / "loopsight", tree / "loopsight")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tree / "loopsight" / package)
    for path in files:
        source = subprocess.run(["git", "show", f"{revision}:{path}"], cwd=ROOT, check=True, capture_output=True).stdout
        (tree / "loopsight" / path).write_bytes(source)
    return tree


def one_round(runs: int, pythonpath: str | None, workers: list[int]) -> dict:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "bench_ingest.py"),
            "--rounds",
            "1",
            "--runs",
            str(runs),
            "--workers",
            *map(str, workers),
        ],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--files", nargs="+", default=["ingest/normalize.py", "ingest/batch.py"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument(
        "--workers",
        type=int,
        nargs="+",
        default=[2],
        help="closed-loop sender threads end to end; one figure per count",
    )
    args = parser.parse_args()
    tree = baseline_tree(args.baseline, args.files)
    kinds = [
        "in_process",
        *(f"end_to_end_{w}" for w in args.workers),
        "in_process_cpu_us",
        *(f"end_to_end_{w}_cpu_us" for w in args.workers),
    ]
    figures: dict[str, dict[str, list[int]]] = {side: {kind: [] for kind in kinds} for side in ("before", "after")}
    try:
        for _ in range(args.rounds):
            for side, path in (("before", str(tree)), ("after", None)):
                result = one_round(args.runs, path, args.workers)
                figures[side]["in_process"].append(result["in_process_median"])
                figures[side]["in_process_cpu_us"].append(result["in_process_cpu_us_per_span"])
                for w in args.workers:
                    figures[side][f"end_to_end_{w}"].append(result["end_to_end"][str(w)]["median"])
                    figures[side][f"end_to_end_{w}_cpu_us"].append(
                        result["end_to_end"][str(w)]["collector_cpu_us_per_span"]
                    )
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    summary: dict = {
        "baseline": args.baseline,
        "files": args.files,
        "rounds": args.rounds,
        "workers": args.workers,
        "figures": figures,
    }
    for side in ("before", "after"):
        for kind in kinds:
            summary[f"{side}_{kind}_median"] = round(statistics.median(figures[side][kind]), 1)
        for w in args.workers:
            summary[f"{side}_ratio_end_to_end_{w}_over_in_process"] = round(
                summary[f"{side}_end_to_end_{w}_median"] / summary[f"{side}_in_process_median"], 2
            )
    for kind in kinds:
        summary[f"after_over_before_{kind}"] = round(
            summary[f"after_{kind}_median"] / summary[f"before_{kind}_median"], 2
        )
    summary["loadavg_end"] = os.getloadavg()[0]
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
