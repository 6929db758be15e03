"""Each detector on small hand-built runs with known answers, the sketch, and the HTTP routes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from detection_corpus import BASE, Call, RunSpec, Step, emit
from starlette.applications import Starlette
from starlette.testclient import TestClient

from loopsight import analytics
from loopsight.collector.api import query_routes
from loopsight.ingest.pipeline import spans_to_request
from loopsight.ingest.sketch import near, sketch
from loopsight.stores import ingest_request
from loopsight.stores.duckdb_store import Store


def _run(index: int, calls: list[Call], vocab: str = "genai", tokens: int = 1000, **kw) -> RunSpec:
    steps = [Step(tokens + 100 * n, 50, 300.0, 10.0, [c]) for n, c in enumerate(calls)]
    steps.append(Step(tokens + 100 * len(calls), 50, 300.0, 10.0))
    return RunSpec(
        index, vocab, kw.pop("agent", "unit-agent"), "unit", BASE + timedelta(minutes=index), steps, set(), **kw
    )


def _c(tool: str, error: str | None = None, ms: float = 100.0, **args) -> Call:
    return Call(tool, args, ms, error, "permanent" if error else None)


@pytest.fixture()
def store_with(tmp_path):
    stores = []

    def make(specs: list[RunSpec]) -> tuple[Store, dict[int, str]]:
        spans, ids = emit(specs)
        store = Store.open(str(tmp_path / "unit.duckdb"))
        stores.append(store)
        ingest_request(store, spans_to_request(spans))
        return store, {i: v[0] for i, v in ids.items()}

    yield make
    for store in stores:
        store.close()


def test_sketch_tells_paraphrases_from_different_questions():
    base = sketch('{"query": "refund policy for damaged items"}')
    for same in (
        "Refund Policy for damaged items?",
        "damaged items refund policy",
        "refund polciy for damaged items",
        "refund policy for the damaged item",
        "refund policy damaged items please",
    ):
        assert near(base, sketch(same)), same
    assert near(base, sketch("refund policy for items"))  # one word dropped
    for other in ("refund policy for lost items", "shipping times to canada", "refund policy for damaged items 2024"):
        assert not near(base, sketch(other)), other
    assert not near(sketch('{"q":"shoes","page":1}'), sketch('{"q":"shoes","page":2}'))
    assert sketch("") == 0 and not near(0, 0)
    long_text = " ".join(f"word{chr(97 + i % 26)}lorem{chr(97 + i // 26)}" for i in range(40))
    assert near(
        sketch("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omicron"),
        sketch("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omicron pi"),
    )
    assert isinstance(sketch(long_text), int) and 0 <= sketch(long_text) < 2**64


def test_each_loop_kind_on_known_runs(store_with):
    a, b, c = (
        _c("search", query="alpha report"),
        _c("fetch_page", url="https://x.test/a"),
        _c("kb_lookup", topic="gamma 1"),
    )
    specs = [
        _run(0, [a, a, _c("calculator", expression="1+1"), a]),  # exact, count 3
        _run(1, [a, b, a, b]),  # oscillation of 2
        _run(2, [a, b, c, a, b, c]),  # oscillation of 3
        _run(3, [_c("query_order", "NotFound", order_id=f"A-{i}") for i in range(3)]),  # repeated error
        _run(
            4,
            [
                _c("search", query=q)
                for q in ("cheap flights to lisbon", "Cheap flights to Lisbon!", "lisbon cheap flights")
            ],
        ),
        _run(5, [_c("search", query="alpha report"), _c("search", query="alpha report")]),  # a retry: nothing
        _run(6, [_c("list_orders", customer="c1", page=p) for p in (1, 2, 3, 4)]),  # pagination: nothing
        _run(
            7,
            [
                _c("query_order", "NotFound", order_id="A-1"),
                _c("query_order", "Timeout", order_id="A-2"),
                _c("query_order", "NotFound", order_id="A-3"),
            ],
        ),  # different errors: nothing
    ]
    store, trace = store_with(specs)
    con = store.reader()
    found = {(r["trace_id"], r["kind"]): r for r in analytics.loops(con)}
    assert {(t, k) for t, k in found} == {
        (trace[0], "exact"),
        (trace[1], "oscillation"),
        (trace[2], "oscillation"),
        (trace[3], "repeated_error"),
        (trace[4], "semantic"),
    }
    exact = found[(trace[0], "exact")]
    assert (exact["tool"], exact["count"], exact["first_step"]) == ("search", 3, 0)
    # tokens of the model calls that began after the first repeated call: steps 1..4 of run 0
    assert exact["wasted_tokens"] == sum(1000 + 100 * n + 50 for n in range(1, 5))
    assert (
        found[(trace[1], "oscillation")]["count"] == 4
        and found[(trace[1], "oscillation")]["tool"] == "fetch_page,search"
    )
    assert found[(trace[2], "oscillation")]["count"] == 6
    assert found[(trace[3], "repeated_error")]["count"] == 3
    rate = analytics.loop_rate(con)
    assert rate == {"runs": 8, "looping_runs": 5, "loop_rate": 5 / 8}
    assert analytics.loop_run_ids(con)[(trace[0], found[(trace[0], "exact")]["run_id"])] == ["exact"]
    assert analytics.top_looping_tools(con, limit=1)[0]["tool"] == "search"
    assert analytics.top_looping_args(con)[0]["calls"] == 3
    buckets = analytics.loops_over_time(con, bucket_seconds=86400)
    assert sum(b["runs"] for b in buckets) == 8 and sum(b["looping_runs"] for b in buckets) == 5
    assert analytics.loops(con, kind="semantic", agent="nobody") == []
    with pytest.raises(ValueError):
        analytics.loops(con, kind="spiral")
    con.close()


def test_guard_record_counts_as_semantic_without_content(store_with):
    calls = [_c("search", query="q one"), _c("search", query="q two"), _c("search", query="q three")]
    calls[1].guard = calls[2].guard = "semantic"
    store, _trace = store_with([_run(0, calls, vocab="loopsight", content=False)])
    con = store.reader()
    (row,) = analytics.loops(con)
    assert (row["kind"], row["count"], row["first_step"]) == ("semantic", 3, 0)
    con.close()


def test_stalls_on_known_runs(store_with):
    normal = [_run(i, [_c("search", ms=100.0 + i, query=f"q {i}")]) for i in range(60)]
    slow = _run(60, [_c("search", ms=9000.0, query="q slow")])
    gap = _run(61, [_c("kb_lookup", topic="a"), _c("kb_lookup", topic="b")])
    gap.steps[1].gap_ms = 7000.0
    retried = _run(62, [_c("search", query="q retried")], vocab="loopsight")
    retried.steps[0].calls[0].backoffs_ms = [800.0, 1600.0]
    stuck = _run(63, [_c("search", query="q stuck")])
    stuck.in_flight = True
    store, trace = store_with([*normal, slow, gap, retried, stuck])
    con = store.reader()
    now = BASE + timedelta(minutes=63, seconds=900)
    got = {(s["kind"], s["trace_id"]): s for s in analytics.stalls(con, now=now)}
    assert set(got) == {("slow_call", trace[60]), ("idle_gap", trace[61]), ("backoff", trace[62]), ("stuck", trace[63])}
    assert got[("slow_call", trace[60])]["tool"] == "search" and got[("slow_call", trace[60])]["expected_ms"] < 200
    assert got[("idle_gap", trace[61])]["duration_ms"] == pytest.approx(7000, abs=50)
    assert got[("backoff", trace[62])]["duration_ms"] == pytest.approx(2400)
    assert got[("stuck", trace[63])]["run_id"] is None and got[("stuck", trace[63])]["duration_ms"] > 800_000
    assert analytics.stalls(con, now=now, stuck_after_seconds=3600, kind="stuck") == []
    first = analytics.time_to_first_tool(con)
    assert first[0]["runs"] == 63 and first[0]["p50_ms"] > 300
    con.close()


def test_burn_on_known_curves(store_with):
    specs = []
    for i in range(6):
        quad = _run(i, [_c("kb_lookup", topic=f"t{i} {n}") for n in range(6)], agent="quadratic")
        for n, step in enumerate(quad.steps):
            step.input_tokens = 800 + 100 * n * n
        lin = _run(10 + i, [_c("kb_lookup", topic=f"u{i} {n}") for n in range(6)], agent="linear")
        specs += [quad, lin]
    store, _trace = store_with(specs)
    con = store.reader()
    result = analytics.burn(con)
    agents = {a["agent"]: a for a in result["agents"]}
    assert agents["quadratic"]["growth_exponent"] == pytest.approx(2.0, abs=0.01) and agents["quadratic"]["superlinear"]
    assert agents["linear"]["growth_exponent"] == pytest.approx(1.0, abs=0.01) and not agents["linear"]["superlinear"]
    assert agents["linear"]["runs"] == 6 and agents["linear"]["tokens_on_failures"] == 0
    assert agents["linear"]["tokens_per_success"] == sum(1000 + 100 * n + 50 for n in range(7))
    top = result["runs"][0]
    assert top["agent"] == "quadratic" and top["wasted_tokens"] == 0
    assert set(top) == {
        "trace_id",
        "run_id",
        "agent",
        "input_tokens",
        "output_tokens",
        "wasted_tokens",
        "cost_usd",
        "wasted_cost_usd",
    }
    curve = analytics.burn_curve(con, agent="quadratic", max_step=2)
    assert [(p["step"], p["avg_input_tokens"]) for p in curve] == [(0, 800), (1, 900), (2, 1200)]
    con.close()


def test_routes_answer_the_design_shapes(store_with):
    a = _c("search", query="alpha report")
    store, trace = store_with([_run(0, [a, a, a])])
    client = TestClient(Starlette(routes=query_routes(store.reader)))
    loops = client.get("/api/v1/loops").json()["loops"]
    assert [set(x) for x in loops] == [
        {"trace_id", "run_id", "tool", "kind", "count", "first_step", "wasted_tokens", "wasted_cost_usd"}
    ]
    assert client.get("/api/v1/loops", params={"kind": "exact", "agent": "unit-agent"}).json()["loops"][0]["count"] == 3
    assert client.get("/api/v1/loops", params={"kind": "spiral"}).status_code == 400
    assert client.get("/api/v1/stalls", params={"since": "yesterday"}).status_code == 400
    assert client.get("/api/v1/stalls").json() == {"stalls": []}
    burn = client.get("/api/v1/burn").json()
    assert set(burn) == {"agents", "runs"} and burn["runs"][0]["trace_id"] == trace[0]
    assert set(burn["agents"][0]) >= {
        "agent",
        "runs",
        "growth_exponent",
        "superlinear",
        "tokens_per_success",
        "tokens_on_failures",
    }
    assert client.get("/api/v1/burn/curve").json()["curve"][0]["step"] == 0
