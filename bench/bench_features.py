"""What a tool call's argument features cost at ingest (``loopsight.ingest.features.call_features``).

    .venv/bin/python bench/bench_features.py --repeat 7

Every call's text is new to the call cache: either a knob changes (``"n": 17``: known words,
the common case of an agent's repeated questions) or a word never seen before is added (a new
id or name: its word vector is looked up). With the word-vector model (the ``semantic`` extra)
and without it. Prints medians of ``--repeat`` rounds, µs per call, and the load average.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import time

from loopsight.ingest import features
from loopsight.ingest.embedding import default_model

TEXTS = {
    "short JSON query": '{"query": "refund policy for damaged items", "limit": 5}',
    "id lookup": '{"order_id": "A-1042", "include": "shipping"}',
    "400 chars of prose": json.dumps(
        {
            "question": (
                "Summarise the customer's complaint about the delayed shipment of order A-1042, "
                "including what the courier said on Tuesday, whether a refund was promised, "
                "and which of our policies applies when a parcel is lost after it left the "
                "warehouse in Rotterdam; keep the answer short and cite the policy section "
                "numbers so the agent can quote them back to the customer in the reply."
            )
        }
    ),
}


def per_call_us(text: str, model: object, n: int, counter: itertools.count, new_word: bool) -> float:
    if new_word:
        inputs = [text[:-1] + f', "note": "zq{next(counter)}x"' + "}" for _ in range(n)]
    else:
        inputs = [text[:-1] + f', "n": {next(counter)}' + "}" for _ in range(n)]
    features._call_cache.clear()
    start = time.perf_counter()
    for t in inputs:
        features.call_features(t, model=model)
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    model = default_model()
    counter = itertools.count()
    out = {}
    for name, text in TEXTS.items():
        for label, m in (("with model", model), ("words only", None)):
            for case, new_word in (("a knob changed", False), ("a new word", True)):
                rounds = [per_call_us(text, m, args.calls, counter, new_word) for _ in range(args.repeat)]
                out[f"{name}, {case}, {label}"] = round(statistics.median(rounds), 1)
    out["model loaded"] = model is not None
    out["loadavg"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
