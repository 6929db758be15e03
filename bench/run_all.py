"""``make bench``: the headline benchmarks one after another, each with its usual arguments.

Left out, because they need something this cannot assume: ``bench_ingest.py --phoenix``
(a Phoenix venv), ``--million`` and ``soak.py`` (minutes of full load), and the side-by-side
scripts (``bench_ingest_ab.py``, ``bench_normalize.py``, ``bench_derive.py --before``,
``bench_trickle.py --baseline``), which need a git revision to compare with. Each is run as
its own process; a failing one is reported and the rest still run.

    .venv/bin/python bench/run_all.py            # everything below, ~6 minutes on 2 cores
    .venv/bin/python bench/run_all.py ingest     # only the names given
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

BENCHMARKS = {
    "instrumentation": ["bench_instrumentation.py"],
    "detection": ["bench_detection.py", "--copies", "200"],
    "analytics": ["bench_analytics.py", "--runs", "100000", "--repeat", "3"],
    "ingest": ["bench_ingest.py", "--runs", "2000", "--rounds", "3", "--workers", "2", "16"],
    "trickle": ["bench_trickle.py", "--senders", "2", "--spans", "64", "--gap-ms", "100", "--seconds", "15"],
    "clickhouse": ["bench_clickhouse.py"],
}


def main(names: list[str]) -> int:
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown:
        print(f"error: unknown benchmark {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    failed = []
    for name in names or list(BENCHMARKS):
        script, *args = BENCHMARKS[name]
        print(f"\n## {name}: python bench/{script} {' '.join(args)}", flush=True)
        started = time.monotonic()
        code = subprocess.run([sys.executable, str(HERE / script), *args], cwd=HERE.parent).returncode
        print(f"## {name}: exit {code} after {time.monotonic() - started:.0f} s", flush=True)
        if code:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
