"""The neutral load (``shared/tools/otlp_load.py``) as a framework's instrumentation sends it:
every tool span carries its argument text and its result (OTel GenAI
``gen_ai.tool.call.arguments`` / ``gen_ai.tool.call.result``) and no ``loopsight.*`` hash, so the
collector computes the argument features and the result hash of every call: the worst case for
ingest (loopsight's own decorators with content off send hashes only and cost nothing here).

    .venv/bin/python bench/bench_ingest.py --load-tool bench/load_with_content.py --runs 2000
    .venv/bin/python bench/bench_ingest_ab.py --baseline REV --load-tool bench/load_with_content.py

Queries are drawn from a few hundred words, so texts repeat as real agents' do (a loop repeats
its text; different runs ask similar things); results are ~300-character JSON pages.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
from pathlib import Path
from typing import Any

_NEUTRAL = Path(os.environ.get("LOOPSIGHT_LOAD_TOOL", "/work/shared/tools/otlp_load.py"))
_spec = importlib.util.spec_from_file_location("otlp_load", _NEUTRAL)
neutral: Any = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(neutral)  # type: ignore[union-attr]
send = neutral.send

_TEXT = (
    "refund policy damaged items order shipping times canada cheap flights london tokyo weather forecast "
    "paris oslo python duckdb appender usage example kubernetes pod pending state git undo last commit "
    "nginx reverse proxy configuration react useeffect runs twice export account data invoice billing "
    "address change password reset subscription cancel upgrade plan pricing enterprise support hours "
    "return label printer warranty claim battery replacement delivery delayed tracking number carrier "
    "hotel booking barcelona restaurant reservation tonight vegan options museum tickets opening hours"
)
WORDS = tuple(_TEXT.split())


def _query(rng: random.Random) -> dict[str, Any]:
    words = rng.sample(WORDS, rng.randint(3, 7))
    args: dict[str, Any] = {"query": " ".join(words)}
    if rng.random() < 0.4:
        args["limit"] = rng.choice((5, 10, 20))
    if rng.random() < 0.2:
        args["order_id"] = f"ORD-{rng.randint(100000, 999999)}"
    return args


def _result(rng: random.Random, args: dict[str, Any]) -> str:
    hits = [
        {
            "title": " ".join(rng.sample(WORDS, 4)),
            "url": f"https://example.org/{rng.getrandbits(40):x}",
            "score": round(rng.random(), 3),
        }
        for _ in range(3)
    ]
    return json.dumps({"query": args["query"], "hits": hits})


def build_requests(n_runs: int, batch_spans: int = 512, seed: int = 7) -> tuple[list[bytes], int]:
    """The neutral requests with argument and result text on every tool span (same seed, same bytes)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    requests, total = neutral.build_requests(n_runs, batch_spans=batch_spans, seed=seed)
    rng = random.Random(seed)
    out = []
    previous: dict[str, Any] | None = None
    for body in requests:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    if not span.name.startswith("execute_tool"):
                        continue
                    kept = [kv for kv in span.attributes if kv.key != "loopsight.tool.args_hash"]
                    del span.attributes[:]
                    span.attributes.extend(kept)
                    args = previous if previous is not None and rng.random() < 0.15 else _query(rng)
                    previous = args
                    span.attributes.append(neutral.kv("gen_ai.tool.call.arguments", json.dumps(args)))
                    span.attributes.append(neutral.kv("gen_ai.tool.call.result", _result(rng, args)))
        out.append(request.SerializeToString())
    return out, total
