"""What a tool call's argument features cost at ingest (``loopsight.ingest.features.call_features``).

    .venv/bin/python bench/bench_features.py --repeat 7
    .venv/bin/python bench/bench_features.py --content --repeat 5         # the whole per-call pass
    PYTHONPATH=TREE .venv/bin/python bench/bench_features.py --content    # the same, another revision

``--content``: the collector's whole pass over a tool call whose producer sends its arguments and
result (``bench/load_with_content.py``, 2,000 runs: ~12 k calls in ~50 requests, the hash key
set and the word vectors loaded as the collector has them): unwrapping, args hash, argument
features and result hash, as the revision at hand does them (request by request with
``normalize.CallBatch`` where it has one, else one call at a time); every cache cleared before
each round. ``TREE``: a revision laid out as a package (``bench_ingest_ab.baseline_tree``).

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


def content_calls(runs: int) -> list[list[tuple[str, str | None]]]:
    """The ``(arguments, result)`` of every tool span of the content-heavy load, request by request."""
    import sys
    from pathlib import Path

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    sys.path.insert(0, str(Path(__file__).parent))
    import load_with_content

    out = []
    for body in load_with_content.build_requests(runs)[0]:
        calls = []
        for resource_spans in ExportTraceServiceRequest.FromString(body).resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    attrs = {kv.key: kv.value.string_value for kv in span.attributes}
                    if "gen_ai.tool.call.arguments" in attrs:
                        calls.append((attrs["gen_ai.tool.call.arguments"], attrs.get("gen_ai.tool.call.result")))
        out.append(calls)
    return out


def content_pass_us(requests: list[list[tuple[str, str | None]]]) -> float:
    """µs per call of the collector's pass over the calls (what ``normalize.agent_row`` does)."""
    from loopsight.ingest import normalize
    from loopsight.results import result_hash

    features.clear_caches()
    n = sum(map(len, requests))
    batch_type = getattr(normalize, "CallBatch", None)
    start = time.perf_counter()
    if batch_type is not None:
        from loopsight.ingest.arguments import parsed_call_arguments

        empty = tuple.__new__(normalize.SpanRow, (None,) * len(normalize.SpanRow._fields))
        for calls in requests:
            batch = batch_type()
            for i, (arguments, result) in enumerate(calls):
                batch.position = i
                batch.add(*parsed_call_arguments(arguments), True)
                result_hash(result)
            batch.fill([empty] * len(calls))
    else:
        from loopsight.ingest.arguments import call_arguments

        for calls in requests:
            for arguments, result in calls:
                text = call_arguments(arguments)
                normalize.args_hash_of_text(text)
                normalize._features(text)  # type: ignore[attr-defined]
                result_hash(result)
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--content", action="store_true", help="the whole pass over the content-heavy load's calls")
    parser.add_argument("--runs", type=int, default=2000, help="with --content: runs of the load")
    args = parser.parse_args()
    if args.content:
        features.set_hash_key(b"bench-features-key")
        default_model()
        requests = content_calls(args.runs)
        rounds = [content_pass_us(requests) for _ in range(args.repeat)]
        print(
            json.dumps(
                {
                    "calls": sum(map(len, requests)),
                    "requests": len(requests),
                    "batched": hasattr(__import__("loopsight.ingest.normalize").ingest.normalize, "CallBatch"),
                    "us_per_call_rounds": [round(r, 1) for r in rounds],
                    "us_per_call_median": round(statistics.median(rounds), 1),
                    "model loaded": default_model() is not None,
                    "loadavg": round(os.getloadavg()[0], 2),
                }
            )
        )
        return
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
