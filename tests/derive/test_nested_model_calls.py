"""An llm span nested under an llm span is part of that model call, not a call of its own.

Another instrumentation (the official openai-v2 instrumentor) opens its ``chat`` span inside
our ``@loopsight.llm`` span; the run must count one model call per turn, its tokens once, and
the stall rules must not judge the nested span as a call. Real OTel SDK spans, real ingest.
"""

from __future__ import annotations

from pathlib import Path

from nested_model_spans import TURNS, model_in_tool_spans, nested_model_spans

from loopsight import analytics
from loopsight.analytics.sql import rows
from loopsight.ingest.pipeline import spans_to_request
from loopsight.stores import ingest_request
from loopsight.stores.duckdb_store import Store
from loopsight.stores.sqlfiles import DERIVE


def test_nested_model_spans_are_one_call_per_turn(tmp_path: Path) -> None:
    spans = nested_model_spans()
    store = Store.open(str(tmp_path / "s.duckdb"))
    try:
        ingest_request(store, spans_to_request(spans))
        con = store.reader()
        llm_spans = con.execute("SELECT count(*) FROM spans WHERE span_type = 'llm'").fetchone()[0]
        assert llm_spans == 2 * TURNS + 1  # the nesting really is in the store
        (run,) = analytics.list_runs(con)
        assert (run["steps"], run["llm_calls"], run["tool_calls"]) == (TURNS, TURNS, TURNS)
        assert (run["input_tokens"], run["output_tokens"]) == (100 + 200 + 300, 7 * TURNS)
        assert rows(con, DERIVE.load("derive_runs"))[0]["llm_calls"] == TURNS  # the rule over the spans agrees
        detail = analytics.trace_detail(con, run["trace_id"])
        assert [s["llm_calls"] for s in detail["steps"]] == [1] * TURNS
        judged = con.execute(
            "SELECT span_type, count(call_ms) FROM run_members WHERE span_type IN ('llm', 'tool') GROUP BY ALL ORDER BY ALL"
        ).fetchall()
        assert judged == [("llm", TURNS), ("tool", TURNS)]
    finally:
        store.close()


def test_a_model_call_inside_a_tool_is_a_call_of_that_step_not_a_step(tmp_path: Path) -> None:
    """A producer that gives no steps is numbered as the decorators number theirs (docs/detection.md)."""
    store = Store.open(str(tmp_path / "s.duckdb"))
    try:
        for numbered in (False, True):
            ingest_request(store, spans_to_request(model_in_tool_spans(numbered)))
        con = store.reader()
        runs = analytics.list_runs(con)
        assert [(r["steps"], r["llm_calls"], r["tool_calls"], r["input_tokens"]) for r in runs] == [(2, 3, 2, 150)] * 2
        steps = [
            con.execute(
                "SELECT list(step ORDER BY \"Timestamp\") FROM spans WHERE \"TraceId\" = ? AND span_type IN ('llm', 'tool')",
                [run["trace_id"]],
            ).fetchone()[0]
            for run in runs
        ]
        assert steps == [[0, 0, 0, 1, 1]] * 2  # chat, summarize, its chat, chat, search
        for run in runs:
            detail = analytics.trace_detail(con, run["trace_id"])
            assert [s["llm_calls"] for s in detail["steps"]] == [2, 1]
    finally:
        store.close()
