"""Fill a chdb store through the collector's ClickHouse writer and time it, for side-by-side runs.

The runs are ``bench_query_ab.py``'s (``bench_analytics.py``'s generator, the same seed), stored
the way that bench fills a store (``open_writer("chdb://…")``, drained). It prints the wall and
the process's CPU seconds and the bytes of the store's active and inactive parts. Run it with
each revision's interpreter (its loopsight) from one tree's ``bench/`` (the same runs), the
revisions alternated::

    for round in 1 2; do for tree in /tmp/wt-9561e7c /tmp/wt-f18a2b4 .; do
        rm -rf /tmp/fill-ab && $tree/.venv/bin/python bench/bench_clickhouse_fill.py --runs 20000 --path /tmp/fill-ab
    done; done
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--path", required=True, help="a chdb directory that does not exist yet")
    args = parser.parse_args()
    if Path(args.path).exists():
        parser.error(f"{args.path} exists: give a new directory (the fill is timed from empty)")
    import bench_query_ab as ab
    import chdb.session

    wall = ab._fill(ab._generator(), f"chdb://{args.path}", args.runs)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    session = chdb.session.Session(args.path)
    parts = "SELECT sum(bytes_on_disk) FROM system.parts WHERE database = currentDatabase() AND active = {}"
    active, inactive = (int(str(session.query(parts.format(flag))).strip() or 0) for flag in (1, 0))
    print(
        f"{args.runs} runs: {wall:.1f} s wall, {usage.ru_utime + usage.ru_stime:.1f} s CPU, "
        f"parts {active / 1e6:.1f} MB active + {inactive / 1e6:.1f} MB inactive"
    )


if __name__ == "__main__":
    main()
