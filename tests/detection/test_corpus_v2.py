"""Detection v2 on the hand-written corpus (tests/detection/corpus_v2.py), through the real ingest:
paraphrases, knob tweaks, pagination, entity swaps, same-result repeats and legitimately equal
results, plus the classic kinds, in every producer vocabulary. docs/detection.md reports the same
figures (``python tests/detection/test_corpus_v2.py`` prints them)."""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from corpus_v2 import LOOP_KINDS, specs
from detection_corpus import emit, openlit_runs

from loopsight.analytics.loops import loop_run_ids
from loopsight.ingest.pipeline import spans_to_request
from loopsight.stores import ingest_request
from loopsight.stores.duckdb_store import Store

GOAL = 0.95


def build(path: str, part: str) -> dict[str, Any]:
    """Ingest one part of the corpus into a DuckDB file; per kind the runs labelled and found."""
    runs, _ = specs(part)
    spans, ids = emit(runs)
    store = Store.open(path)
    try:
        for i in range(0, len(spans), 2000):
            ingest_request(store, spans_to_request(spans[i : i + 2000]))
        reader = store.reader()
        found = loop_run_ids(reader)
        openlit = openlit_runs(reader)
    finally:
        store.close()
    trace_of = {spec.index: ids[spec.index][0] for spec in runs}
    truth = {trace_of[spec.index]: set(spec.loops) for spec in runs}
    got: dict[str, set[str]] = defaultdict(set)
    for (trace_id, _run), kinds in found.items():
        for kind in kinds:
            got[kind].add(trace_id)
    scores = {}
    for kind in LOOP_KINDS:
        labelled = {t for t, kinds in truth.items() if kind in kinds}
        flagged = got[kind]
        tp = len(labelled & flagged)
        scores[kind] = {
            "support": len(labelled),
            "flagged": len(flagged),
            "precision": tp / len(flagged) if flagged else 1.0,
            "recall": tp / len(labelled) if labelled else 1.0,
            "missed": sorted(spec.scenario for spec in runs if trace_of[spec.index] in labelled - flagged),
            "false": sorted(spec.scenario for spec in runs if trace_of[spec.index] in flagged - labelled),
        }
    negatives = {t for t, kinds in truth.items() if not kinds}
    flagged_any = {t for t in truth if any(t in got[k] for k in got)}
    scores["hard_negatives"] = {"of": len(negatives), "flagged": len(negatives & flagged_any)}
    looping = {t for t, kinds in truth.items() if kinds}
    scores["openlit"] = {  # OpenLIT's rule (one tool with the same arguments 3 times) on the same runs
        "any_loop_recall": len(looping & openlit) / len(looping),
        "semantic_recall": len({t for t, k in truth.items() if "semantic" in k} & openlit)
        / max(1, sum("semantic" in k for k in truth.values())),
        "hard_negatives_flagged": len(negatives & openlit),
    }
    scores["part"] = part
    return scores


@pytest.fixture(scope="module", params=["dev", "holdout"])
def scores(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return build(str(tmp_path_factory.mktemp("v2") / f"{request.param}.duckdb"), request.param)


@pytest.mark.parametrize("kind", ["no_progress", "exact", "oscillation", "repeated_error"])
def test_each_kind_meets_the_goal(scores: dict[str, Any], kind: str) -> None:
    m = scores[kind]
    if m["support"] == 0:
        pytest.skip(f"no {kind} runs in this part")
    assert m["precision"] >= GOAL and m["recall"] >= GOAL, m


# Measured (docs/detection.md): semantic precision 0.98 / 1.00 and recall 0.94 / 0.82 (development /
# held-out part). The misses are synonyms a static word model does not know (undo / revert,
# export / download, invite / add, descending / reverse order) and identifiers written two ways
# (k8s / kubernetes). These floors hold what is reached; the goal test says it is not reached yet.
SEMANTIC_FLOOR = {"dev": (0.97, 0.94), "holdout": (1.0, 0.82)}


def test_semantic_repeats_hold_their_measured_floor(scores: dict[str, Any]) -> None:
    m = scores["semantic"]
    precision, recall = SEMANTIC_FLOOR[scores["part"]]
    assert m["precision"] >= precision and m["recall"] >= recall, m


@pytest.mark.xfail(strict=True, reason="semantic recall is 0.94 / 0.82, below the 0.95 goal (docs/detection.md)")
def test_semantic_repeats_meet_the_goal(scores: dict[str, Any]) -> None:
    m = scores["semantic"]
    assert m["precision"] >= GOAL and m["recall"] >= GOAL, m


def test_hard_negatives_are_not_flagged(scores: dict[str, Any]) -> None:
    negatives = scores["hard_negatives"]
    assert negatives["of"] >= 30
    assert negatives["flagged"] <= 0.05 * negatives["of"], negatives


if __name__ == "__main__":  # the figures for docs/detection.md
    import json
    import tempfile

    for part in ("dev", "holdout"):
        with tempfile.TemporaryDirectory() as tmp:
            print(part, json.dumps(build(f"{tmp}/c.duckdb", part), indent=1))
