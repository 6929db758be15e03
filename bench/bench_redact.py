"""The redactor of this checkout against another revision's, side by side in one process.

    .venv/bin/python bench/bench_redact.py --baseline cdd03f5

Texts: a realistic 500-character exception message, 4 KiB of JSON content (what capture
redacts), and hostile runs ("sk-" and "eyJa-" repeated: the former api_key and JWT patterns
rescanned the rest of the text from each). Medians of ``--rounds`` rounds of ``--calls`` calls,
µs per call (hostile: ms per call), and the ratio new / old.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from loopsight.redaction import redact as current

ROOT = Path(__file__).resolve().parent.parent


def _baseline(rev: str) -> Callable[[str], str]:
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:loopsight/redaction.py"], capture_output=True, text=True, check=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "baseline_redaction.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("baseline_redaction", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.redact  # type: ignore[no-any-return]


def texts() -> dict[str, str]:
    rng = random.Random(7)
    words = [
        "the",
        "tool",
        "call",
        "failed",
        "because",
        "upstream",
        "service",
        "returned",
        "error",
        "while",
        "fetching",
        "order",
        "data",
        "for",
        "customer",
        "shipment",
        "refund",
        "status",
        "retry",
        "later",
        "timeout",
        "invoice",
        "account",
    ]

    def prose(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    error = {"error": {"code": "bad_gateway", "message": prose(40), "request_id": "req_8f14e45fceea167a"}}
    message = "HTTPError 502 from https://api.shop.example.com/v2/orders/ORD-77123: " + json.dumps(error)
    message = (message + " " + prose(80))[:500]
    orders = json.dumps({"orders": [{"id": i, "status": "shipped", "total": 12.5 * i} for i in range(30)]})
    content = json.dumps(
        {
            "messages": [
                {"role": "user", "content": prose(120)},
                {"role": "assistant", "content": prose(200)},
                {"role": "tool", "content": orders},
            ],
            "usage": {"prompt_tokens": 812, "completion_tokens": 96},
        }
    )[:4096]
    return {
        "500-char exception message": message,
        "4 KiB JSON content": content,
        "hostile 'sk-' x 5,000 (15 KB)": "sk-" * 5_000,
        "hostile 'eyJa-' x 3,000 (15 KB)": "eyJa-" * 3_000,
    }


def per_call_us(redact: Callable[[str], str], text: str, calls: int, rounds: int) -> float:
    out = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            redact(text)
        out.append((time.perf_counter() - started) / calls * 1e6)
    return statistics.median(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="a git revision")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    old = _baseline(args.baseline)
    for name, text in texts().items():
        calls = 2 if name.startswith("hostile") else args.calls
        rounds = 3 if name.startswith("hostile") else args.rounds
        before = per_call_us(old, text, calls, rounds)
        after = per_call_us(current, text, calls, rounds)
        print(f"{name:34} {args.baseline} {before:11,.1f} µs   now {after:9,.1f} µs   now/before {after / before:6.3f}")


if __name__ == "__main__":
    main()
