"""Detection queries on ~100k runs / ~1M spans, against a bare DuckDB scan of the same columns.

Builds the labelled corpus (tests/detection/detection_corpus.py) once, then copies its runs
with fresh trace ids and shifted times inside DuckDB until it holds ``--copies`` x 480 runs,
and fills the derived per-run tables of the copies (``loopsight.stores.derive.refresh``).

    .venv/bin/python bench/bench_detection.py --copies 200
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "detection"))

from detection_corpus import build

from loopsight import analytics
from loopsight.ingest.features import call_features, clear_caches
from loopsight.stores.derive import refresh
from loopsight.stores.duckdb_store import DuckDBReader


def scale(path: str, copies: int) -> None:
    con = duckdb.connect(path)
    con.execute("CREATE TEMP TABLE base AS SELECT * FROM spans")
    con.execute(
        """INSERT INTO spans BY NAME
           SELECT * EXCLUDE (copy) REPLACE (
                    substr(md5("TraceId" || copy::VARCHAR), 1, 32) AS "TraceId",
                    "Timestamp" + to_hours(copy * 12) AS "Timestamp",
                    end_time + to_hours(copy * 12) AS end_time)
           FROM base, (SELECT range AS copy FROM range(1, $n))""",
        {"n": copies},
    )
    # The copies bypass the writer: fill the derived per-run tables the way an upgrade does.
    started = time.perf_counter()
    con.begin()
    refresh(con)
    con.commit()
    print(f"derived tables of the copies (backfill): {time.perf_counter() - started:.1f} s")
    con.close()


def timed(fn, repeat: int = 5) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default="/tmp/loopsight-bench-detection.duckdb")
    parser.add_argument("--copies", type=int, default=200)
    args = parser.parse_args()
    Path(args.db).unlink(missing_ok=True)
    build(args.db)
    scale(args.db, args.copies)
    con = DuckDBReader(duckdb.connect(args.db, read_only=True))
    spans, runs = con.execute("SELECT count(*), count(*) FILTER (WHERE span_type = 'agent') FROM spans").fetchone()
    print(f"{spans} spans, {runs} runs")
    scan = timed(
        lambda: con.execute(
            'SELECT count(*), sum(length(tool)), sum(length(args_hash)), sum(args_frame >> 60), sum(input_tokens), max("Timestamp") '
            "FROM spans WHERE span_type IN ('tool', 'llm')"
        ).fetchall()
    )
    print(f"bare scan of the columns: {scan * 1000:.0f} ms")
    for name, fn in [
        ("loops (limit 1000)", lambda: analytics.loops(con)),
        ("loop_rate", lambda: analytics.loop_rate(con)),
        ("stalls (limit 1000)", lambda: analytics.stalls(con)),
        ("burn (agents + top 100 runs)", lambda: analytics.burn(con)),
        ("burn_curve", lambda: analytics.burn_curve(con)),
    ]:
        t = timed(fn, 3)
        print(f"{name}: {t * 1000:.0f} ms ({t / scan:.1f}x scan)")
    # a knob changed on every call: known words, a text the call cache has not seen
    texts = [f'{{"query": "best running shoes for flat feet", "limit": {n}}}' for n in range(20000)]
    clear_caches()
    started = time.perf_counter()
    for text in texts:
        call_features(text)
    print(f"argument features of a short JSON query: {(time.perf_counter() - started) / len(texts) * 1e6:.1f} us")


if __name__ == "__main__":
    main()
