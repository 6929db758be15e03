"""Precision and recall per kind on the labelled corpus (docs/detection.md reports the same figures)."""

from __future__ import annotations

import pytest
from detection_corpus import LOOP_KINDS, VOCABULARIES, score

from loopsight.stores.duckdb_store import DuckDBReader

GOAL = 0.95


@pytest.fixture(scope="module")
def result(corpus):
    import duckdb

    con = DuckDBReader(duckdb.connect(corpus[0], read_only=True))
    try:
        return score(con, corpus[1])
    finally:
        con.close()


@pytest.mark.parametrize("kind", [*LOOP_KINDS, "slow_call", "backoff", "idle_gap", "stuck", "superlinear"])
def test_each_kind_meets_the_goal(result, kind):
    m = result["loopsight"][kind]
    assert m["support"] > 0
    assert m["precision"] >= GOAL and m["recall"] >= GOAL, m


@pytest.mark.parametrize("vocab", VOCABULARIES)
def test_loops_are_found_in_every_vocabulary(result, vocab):
    for kind, m in result["by_vocab"][vocab].items():
        assert m["support"] >= 10, (vocab, kind)
        assert m["precision"] >= 0.9 and m["recall"] >= 0.9, (vocab, kind, m)


def test_hard_negatives_are_not_flagged(result):
    flagged = result["hard_negatives_flagged"]
    assert flagged["of"] >= 200
    assert flagged["loopsight"] <= 0.02 * flagged["of"]


def test_openlit_rule_misses_what_loopsight_finds(result):
    assert result["openlit"]["exact"]["recall"] >= GOAL
    for kind in ("oscillation", "repeated_error", "semantic"):
        assert result["openlit"][kind]["recall"] < 0.2


def test_growth_exponents_match_the_generating_curves(result):
    for agent, k in result["exponents"].items():
        expected = {"support": 1.0, "planner": 1.0, "research": 2.0}.get(agent.split("-")[0])
        if expected is None:
            assert k < 0.8, (agent, k)
        else:
            assert abs(k - expected) < 0.15, (agent, k)
