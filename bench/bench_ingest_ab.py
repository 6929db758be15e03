"""End-to-end and in-process ingest, this checkout against an earlier revision (whole, or some
of its files), alternating rounds of ``bench/bench_ingest.py`` so both see the same machine noise.

    .venv/bin/python bench/bench_ingest_ab.py --baseline 9561e7c --rounds 3
    .venv/bin/python bench/bench_ingest_ab.py --baseline 6cad44b --rounds 3 --files ingest/normalize.py

The baseline is a package tree laid out as the wheel lays it out: without ``--files`` the
whole revision (its part folders mapped into ``loopsight/`` as its pyproject.toml maps them),
with ``--files`` this checkout with those files taken from ``--baseline`` (``git show``). It is
put first on ``PYTHONPATH`` (the collector subprocess inherits it; the editable install's
finder comes after it). Prints one JSON object: per-round figures, medians and the ratios.
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
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _mapping(pyproject: str) -> dict[str, str]:
    """``{folder: target}`` of a revision's pyproject.toml (hatchling sources or setuptools package-dir)."""
    config = tomllib.loads(pyproject)["tool"]
    sources = config.get("hatch", {}).get("build", {}).get("targets", {}).get("wheel", {}).get("sources")
    if sources:
        return {folder: target for folder, target in sources.items()}
    return {folder: package.replace(".", "/") for package, folder in config["setuptools"]["package-dir"].items()}


def _show(revision: str, path: str) -> bytes:
    return subprocess.run(["git", "show", f"{revision}:{path}"], cwd=ROOT, check=True, capture_output=True).stdout


def baseline_tree(revision: str, files: list[str]) -> Path:
    tree = Path(tempfile.mkdtemp(prefix="loopsight-baseline-"))
    if files:
        layout, source = _mapping((ROOT / "pyproject.toml").read_text()), None
    else:
        layout, source = _mapping(_show(revision, "pyproject.toml").decode()), revision
    for folder, target in sorted(layout.items(), key=lambda item: item[1].count("/")):
        if source is None:
            shutil.copytree(ROOT / folder, tree / target, dirs_exist_ok=True)
            continue
        names = subprocess.run(
            ["git", "ls-tree", "-r", "--name-only", source, folder],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        for name in names:
            out = tree / target / Path(name).relative_to(folder)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(_show(source, name))
    for path in files:
        folder = next(f for f in layout if path.startswith(f + "/"))
        (tree / layout[folder] / path[len(folder) + 1 :]).write_bytes(_show(revision, path))
    return tree


def one_round(runs: int, pythonpath: str | None, workers: list[int], load_tool: str | None = None) -> dict:
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
            *(["--load-tool", load_tool] if load_tool else []),
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
    parser.add_argument("--files", nargs="*", default=[], help="only these files from --baseline (default: all)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--load-tool", help="another load module for bench_ingest.py (bench/load_with_content.py)")
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
                result = one_round(args.runs, path, args.workers, args.load_tool)
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
        "load_tool": args.load_tool,
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
