"""Decode + normalize + Arrow (no store): this checkout against an earlier ``normalize.py``, ``otlp.py`` and ``batch.py``.

    .venv/bin/python bench/bench_normalize.py --baseline 6cad44b --rounds 7

Loads ``ingest/normalize.py``, ``ingest/otlp.py`` and ``ingest/batch.py`` as they
were at ``--baseline`` (``git show``; the old ``otlp.py`` and ``batch.py`` import the old
``normalize.py``) next to the current modules, checks both give the same rows and the same
Arrow table for every request of the load, then times parse + ``otlp.iter_rows`` +
``batch.to_arrow`` in alternating rounds (same machine noise for both) and prints medians and the ratio.
Load: ``/work/shared/tools/otlp_load.py`` requests (~512 spans each).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from loopsight.ingest import batch as current_batch
from loopsight.ingest import normalize as current
from loopsight.ingest import otlp as current_otlp

ROOT = Path(__file__).resolve().parent.parent


def load_module(name: str, path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def rows(otlp: ModuleType, request: ExportTraceServiceRequest) -> list[Any]:
    """The rows ``otlp.iter_rows`` accepts (the load has no rejected spans)."""
    return [row for row in otlp.iter_rows(request, otlp.Limits()) if not isinstance(row, str)]


def one_round(otlp: ModuleType, batch: ModuleType, bodies: list[bytes]) -> float:
    started = time.perf_counter()
    n = 0
    for body in bodies:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        n += batch.to_arrow(rows(otlp, request)).num_rows
    return n / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="git revision of ingest/normalize.py to compare with")
    parser.add_argument("--runs", type=int, default=1000, help="agent runs in the load (~13 spans each)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--load-tool", default="/work/shared/tools/otlp_load.py")
    args = parser.parse_args()

    def at_baseline(path: str, name: str) -> ModuleType:
        source = subprocess.run(
            ["git", "show", f"{args.baseline}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
            handle.write(source)
        return load_module(name, handle.name)

    baseline = at_baseline("ingest/normalize.py", "normalize_baseline")
    sys.modules["loopsight.ingest.normalize"] = baseline  # what the old otlp.py and batch.py import
    try:
        baseline_otlp = at_baseline("ingest/otlp.py", "otlp_baseline")
        baseline_batch = at_baseline("ingest/batch.py", "batch_baseline")
    finally:
        sys.modules["loopsight.ingest.normalize"] = current
    bodies, total = load_module("otlp_load", args.load_tool).build_requests(args.runs)

    for body in bodies:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        old_rows, new_rows = rows(baseline_otlp, request), rows(current_otlp, request)
        assert [tuple(r) for r in old_rows] == [tuple(r) for r in new_rows], "rows differ"
        assert baseline_batch.to_arrow(old_rows).equals(current_batch.to_arrow(new_rows)), "Arrow tables differ"

    results: dict[str, list[float]] = {"baseline": [], "current": []}
    one_round(current_otlp, current_batch, bodies)  # warm-up
    for _ in range(args.rounds):
        for name, otlp, batch in (
            ("baseline", baseline_otlp, baseline_batch),
            ("current", current_otlp, current_batch),
        ):
            results[name].append(one_round(otlp, batch, bodies))
    medians = {name: statistics.median(values) for name, values in results.items()}
    print(
        json.dumps(
            {
                "spans": total,
                "rounds": args.rounds,
                "baseline": args.baseline,
                "baseline_spans_per_s": [round(v) for v in results["baseline"]],
                "current_spans_per_s": [round(v) for v in results["current"]],
                "median_baseline": round(medians["baseline"]),
                "median_current": round(medians["current"]),
                "speedup": round(medians["current"] / medians["baseline"], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
