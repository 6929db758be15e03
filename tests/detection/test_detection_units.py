"""Each detector on small hand-built runs with known answers, the near test, and the HTTP routes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from detection_corpus import BASE, Call, RunSpec, Step, emit
from starlette.applications import Starlette
from starlette.testclient import TestClient

from loopsight import analytics
from loopsight.collector.api import query_routes
from loopsight.ingest.pipeline import spans_to_request
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


NEAR_CASES: list[tuple[str, list[Call], set[str]]] = [
    # knob tweaks are the same question asked again
    ("limit", [_c("search", q="orders", limit=n) for n in (10, 11, 12)], {"semantic"}),
    ("top_k", [_c("kb_search", query="refund policy", top_k=k) for k in (5, 8, 12)], {"semantic"}),
    ("max_results", [_c("web_search", query="duckdb appender", max_results=n) for n in (10, 20, 50)], {"semantic"}),
    # progress through a result set is not
    ("page", [_c("list_orders", customer="c1", page=p) for p in (1, 2, 3, 4)], set()),
    ("offset", [_c("search", q="shoes", offset=o) for o in (0, 20, 40, 60)], set()),
    ("cursor", [_c("list_events", cursor=c) for c in ("eyJwIjoxfQ", "eyJwIjoyfQ", "eyJwIjozfQ")], set()),
    # another entity is another question
    ("city", [_c("get_weather", city=c) for c in ("Paris", "Oslo", "Berlin")], set()),
    ("order", [_c("lookup_order", order_id=f"ORD-{i}") for i in (1, 2, 3)], set()),
    ("in the text", [_c("search", query=f"weather forecast {c}") for c in ("paris", "oslo", "lima")], set()),
    # paraphrases by meaning
    (
        "flights",
        [
            _c("search_flights", query=q)
            for q in (
                "cheap flights london to tokyo",
                "cheapest flight from london to tokyo",
                "low cost flights london tokyo",
            )
        ],
        {"semantic"},
    ),
    (
        "appender",
        [
            _c("web_search", query=q)
            for q in (
                "how to use the duckdb appender from python",
                "python duckdb appender usage example",
                "duckdb appender python how to",
            )
        ],
        {"semantic"},
    ),
    (
        "different questions",
        [_c("kb_search", query=q) for q in ("refund policy", "shipping times", "gift cards")],
        set(),
    ),
]


@pytest.mark.parametrize(("name", "calls", "kinds"), NEAR_CASES, ids=[c[0] for c in NEAR_CASES])
@pytest.mark.parametrize("vocab", ["genai", "openinference", "traceloop"])
def test_near_by_the_structure_and_the_meaning_of_the_arguments(store_with, name, calls, kinds, vocab):
    store, _ = store_with([_run(0, calls, vocab=vocab)])
    con = store.reader()
    try:
        assert {r["kind"] for r in analytics.loops(con)} == kinds
    finally:
        con.close()


LISTING = "\n".join(f"{i}. Headline number {i} of the day, with a summary of the story" for i in range(5))
LOGIN_WALL = (
    "<html><body><h1>Sign in to continue</h1><p>Subscribers only. Log in or create an account.</p></body></html>"
)


@pytest.mark.parametrize("vocab", ["loopsight", "genai", "openinference", "traceloop"])
def test_no_progress_is_the_same_answer_to_different_questions(store_with, vocab):
    wall = [_c("fetch_page", url=f"https://news.example/{p}") for p in ("a/1", "a/1?amp=1", "m/a/1")]
    for call in wall:
        call.result = LOGIN_WALL
    attach = [_c("attach_file", path=f"/tmp/{f}.pdf") for f in ("a", "b", "c")]
    for call, answer in zip(attach, ("true", '"File attached successfully."', '{"status": "ok"}'), strict=True):
        call.result = answer
    news = [_c("fetch_page", url=f"https://news.example/{p}") for p in ("b", "c", "d")]
    for n, call in enumerate(news):
        call.result = LISTING.replace("day", f"day {n}")
    same = [_c("search", query="alpha report") for _ in range(3)]
    for call in same:
        call.result = LISTING
    store, trace = store_with(
        [
            _run(0, wall, vocab=vocab),
            _run(1, attach, vocab=vocab),
            _run(2, news, vocab=vocab),
            _run(3, same, vocab=vocab),
        ]
    )
    con = store.reader()
    try:
        found = {(r["trace_id"], r["kind"]): r for r in analytics.loops(con)}
        assert set(found) == {(trace[0], "no_progress"), (trace[3], "exact")}
        assert (found[(trace[0], "no_progress")]["count"], found[(trace[0], "no_progress")]["tool"]) == (
            3,
            "fetch_page",
        )
        assert found[(trace[3], "exact")]["no_progress"] is True  # the same call gave the same answer
        assert analytics.loops(con, kind="no_progress")[0]["trace_id"] == trace[0]
        from loopsight.analytics.metrics import MetricSpec, measure

        rate = measure(con, MetricSpec("loop_rate"), BASE - timedelta(days=1), BASE + timedelta(days=1))
        assert (rate.value, rate.samples) == (2 / 4, 4)  # the loop_rate alert counts no_progress runs
    finally:
        con.close()


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
    slow_call = got[("slow_call", trace[60])]
    # the threshold: max(median x e^(4 x 0.3), median + 500 ms), the median of the 61 calls ~130 ms
    assert slow_call["tool"] == "search" and slow_call["expected_ms"] == pytest.approx(130 + 500, abs=5)
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
        {
            "trace_id",
            "run_id",
            "agent",
            "started_at",
            "tool",
            "kind",
            "count",
            "first_step",
            "wasted_tokens",
            "wasted_cost_usd",
            "scope",
            "session_id",
            "no_progress",
        }
    ]
    assert client.get("/api/v1/loops", params={"kind": "exact", "agent": "unit-agent"}).json()["loops"][0]["count"] == 3
    assert client.get("/api/v1/loops", params={"kind": "spiral"}).status_code == 400
    assert client.get("/api/v1/stalls", params={"since": "yesterday"}).status_code == 400
    assert client.get("/api/v1/stalls").json()["stalls"] == []
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


@pytest.mark.parametrize(
    ("name", "fast", "slow"),
    [
        (
            "the issue's: 20 calls of 3.5-5 s among 258 of ~150 ms",
            [150.0 + (i % 7) for i in range(258)],
            [3500.0 + 75 * i for i in range(20)],
        ),
        (
            "8 % of calls at 25 x the median",
            [400.0 * (1 + 0.1 * ((i % 5) - 2) / 2) for i in range(184)],
            [10_000.0] * 16,
        ),
        ("a natural spread, nothing slow", [120.0 * 2.0 ** ((i % 9 - 4) / 4) for i in range(300)], []),
    ],
)
def test_slow_calls_are_found_however_large_their_share(store_with, name, fast, slow):
    durations = fast + slow
    runs = [_run(i, [_c("search", ms=ms, query=f"q {i}")]) for i, ms in enumerate(durations)]
    store, trace = store_with(runs)
    con = store.reader()
    try:
        flagged = {s["trace_id"] for s in analytics.stalls(con, kind="slow_call", limit=10_000)}
        assert flagged == {trace[len(fast) + i] for i in range(len(slow))}
    finally:
        con.close()


@pytest.mark.parametrize("vocab", ["genai", "openinference"])
def test_a_loop_across_the_runs_of_a_session(store_with, vocab):
    """The user asks again and the agent repeats last turn's calls: each run alone looks fine."""
    turn = [_c("lookup_order", order_id="A-1001"), _c("track_package", order_id="A-1001")]
    first = _run(0, turn, vocab=vocab, session="sess-1")
    again = _run(1, [_c("lookup_order", order_id="A-1001"), _c("track_package", order_id="A-1001")], vocab=vocab)
    again.session = "sess-1"
    alone = _run(2, [_c("lookup_order", order_id="A-2002"), _c("track_package", order_id="A-2002")], vocab=vocab)
    store, trace = store_with([first, again, alone])
    con = store.reader()
    try:
        (loop,) = analytics.loops(con)
        assert (loop["kind"], loop["scope"], loop["session_id"], loop["trace_id"]) == (
            "oscillation",
            "session",
            "sess-1",
            trace[1],
        )
        assert loop["count"] == 4 and loop["tool"] == "lookup_order,track_package"
        assert analytics.loops(con, kind="oscillation")[0]["scope"] == "session"
        (session,) = analytics.sessions(con)
        assert (session["session_id"], session["runs"], session["loops"]) == ("sess-1", 2, 1)
        assert {r["trace_id"] for r in analytics.list_runs(con, session="sess-1")} == {trace[0], trace[1]}
        assert all(r["session_id"] == "sess-1" for r in analytics.list_runs(con, session="sess-1"))
        client = TestClient(Starlette(routes=query_routes(store.reader)))
        body = client.get("/api/v1/sessions").json()
        assert set(body["sessions"][0]) == {
            "session_id",
            "runs",
            "first_started_at",
            "last_started_at",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "unpriced_calls",
            "loops",
        }
        assert len(client.get("/api/v1/runs", params={"session": "sess-1"}).json()["runs"]) == 2
        mine = client.get("/api/v1/loops", params={"session": "sess-1"}).json()
        assert [(x["scope"], x["trace_id"]) for x in mine["loops"]] == [("session", trace[1])] and mine["total"] == 1
        assert client.get("/api/v1/loops", params={"session": "sess-2"}).json()["total"] == 0
        assert analytics.loop_counts(con, session="sess-1") == {"oscillation": 1}
        assert client.get("/api/v1/sessions", params={"limit": "x"}).status_code == 400
    finally:
        con.close()


def test_one_session_is_asked_for_by_its_id(store_with):
    """The Sessions page's tiles sum one session over all its runs (its table lists the first 500)."""
    runs = [_run(i, [_c("lookup_order", order_id=f"A-{i}")], session=f"sess-{i % 2}") for i in range(5)]
    store, _ = store_with(runs)
    client = TestClient(Starlette(routes=query_routes(store.reader)))
    assert len(client.get("/api/v1/sessions").json()["sessions"]) == 2
    (one,) = client.get("/api/v1/sessions", params={"session": "sess-0"}).json()["sessions"]
    assert (one["session_id"], one["runs"]) == ("sess-0", 3)
    assert client.get("/api/v1/sessions", params={"session": "sess-9"}).json()["sessions"] == []
    assert client.get("/api/v1/sessions", params={"session": "x" * 513}).status_code == 400
