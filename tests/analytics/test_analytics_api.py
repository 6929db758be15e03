"""The query API routes over the fixture store: shapes, filters, and parameter validation."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from analytics_world import World
from starlette.testclient import TestClient

from loopsight.collector.app import Settings, create_app

CURRENT = {"since": "2026-01-11T00:00:00Z", "until": "2026-01-12T00:00:00Z"}


@pytest.fixture(scope="module")
def client(world: World) -> Iterator[TestClient]:
    with TestClient(create_app(world.store, Settings())) as test_client:
        yield test_client


def names(world: World, runs: list[dict]) -> list[str]:
    by_id = {info.run_id: name for name, info in world.runs.items()}
    return [by_id[run["run_id"]] for run in runs]


def test_runs_filters_tool_and_min_tokens(world: World, client: TestClient) -> None:
    answer = client.get("/api/v1/runs", params={"tool": "search", "min_tokens": "496"})
    assert answer.status_code == 200
    assert names(world, answer.json()["runs"]) == ["O1", "R1"]
    answer = client.get("/api/v1/runs", params={"status": "ok", "termination_reason": "loop_detected"})
    assert names(world, answer.json()["runs"]) == ["R2"]
    answer = client.get("/api/v1/runs", params={"status": "error", "termination_reason": "loop_detected"})
    assert answer.json()["runs"] == []
    answer = client.get("/api/v1/runs", params={"sort": "tokens", "limit": "2", **CURRENT})
    assert [
        (name, run["tokens"])
        for name, run in zip(names(world, answer.json()["runs"]), answer.json()["runs"], strict=False)
    ] == [
        ("R5", 1200),
        ("R1", 1100),
    ]


def test_run_detail(world: World, client: TestClient) -> None:
    info = world.runs["R2"]
    body = client.get(f"/api/v1/runs/{info.trace_id.upper()}").json()
    assert set(body) == {"runs", "spans", "steps", "loops", "stuck"} and body["stuck"] is False
    assert body["runs"][0]["run_id"] == info.run_id
    assert (body["runs"][0]["status"], body["runs"][0]["termination_reason"]) == ("ok", "loop_detected")
    assert len(body["spans"]) == 7
    listed = client.get("/api/v1/loops").json()["loops"]
    keys = ("run_id", "kind", "tool", "count", "first_step", "wasted_tokens", "scope", "no_progress")
    mine = sorted(tuple(x[k] for k in keys) for x in listed if x["trace_id"] == info.trace_id)
    assert mine and sorted(tuple(x[k] for k in keys) for x in body["loops"]) == mine  # what the Loops page lists


def test_tools_route(client: TestClient) -> None:
    body = client.get("/api/v1/tools", params=CURRENT).json()
    assert [(t["tool"], t["calls"], t["errors"], t["errors_by_class"]) for t in body["tools"]] == [
        ("search", 5, 0, {}),
        ("refund", 3, 2, {"permanent": 1, "transient": 1}),
        ("lookup", 1, 1, {"transient": 1}),
    ]
    assert set(body["tools"][0]) == {
        "tool",
        "calls",
        "errors",
        "fail_rate",
        "errors_by_class",
        "retries",
        "p50_ms",
        "p95_ms",
        "turns_after_failures",
        "tokens_after_failures",
        "cost_after_failures_usd",
    }
    grouped = client.get("/api/v1/tools", params={"group_by": "agent", "agent": "billing"}).json()["tools"]
    assert [(t["tool"], t["agent"], t["calls"]) for t in grouped] == [("refund", "billing", 4)]


def test_overview_route(client: TestClient) -> None:
    body = client.get("/api/v1/overview", params=CURRENT).json()
    assert body["tiles"]["runs"] == {"value": 5, "previous": 2, "change": 3, "change_pct": 1.5}
    assert body["tiles"]["loop_rate"]["value"] == 0.2
    assert body["previous_window"]["since"] == "2026-01-10T00:00:00.000000Z"


def test_terminations_route(client: TestClient) -> None:
    body = client.get("/api/v1/terminations", params={"bucket": "86400", "service": "svc-b"}).json()
    assert body["bucket_seconds"] == 86400
    assert [(r["bucket"][:10], r["termination_reason"], r["runs"]) for r in body["terminations"]] == [
        ("2026-01-10", "timeout", 1),
        ("2026-01-11", "completed", 1),
        ("2026-01-11", "max_steps", 1),
    ]


@pytest.mark.parametrize(
    ("path", "params", "message"),
    [
        ("/api/v1/runs", {"since": "yesterday"}, "since='yesterday' is not an ISO-8601 time"),
        ("/api/v1/runs", {"until": "2026-13-45"}, "until="),
        ("/api/v1/runs", {"since": "-999999d"}, "since='-999999d' reaches back more than 100 years"),
        ("/api/v1/runs", {"since": "9" * 100}, "since is longer than 64"),
        ("/api/v1/runs", {"since": "2026-01-02", "until": "2026-01-01"}, "since must be before until"),
        ("/api/v1/runs", {"limit": "100000000"}, "limit=100000000 is out of range"),
        ("/api/v1/runs", {"limit": "-1"}, "out of range"),
        ("/api/v1/runs", {"limit": "ten"}, "limit='ten' is not an integer"),
        ("/api/v1/runs", {"offset": "1e9"}, "offset='1e9' is not an integer"),
        ("/api/v1/runs", {"min_tokens": "-5"}, "min_tokens=-5 is out of range"),
        ("/api/v1/runs", {"min_tokens": "9" * 5000}, "is not an integer"),
        ("/api/v1/runs", {"limit": "+5"}, "limit='+5' is not an integer"),
        ("/api/v1/runs", {"limit": "1_000"}, "limit='1_000' is not an integer"),
        ("/api/v1/runs", {"limit": "\uff12"}, "is not an integer"),
        ("/api/v1/runs", {"status": "ok' OR 1=1"}, "status="),
        ("/api/v1/runs", {"sort": "tokens; DROP TABLE spans"}, "sort="),
        ("/api/v1/runs", {"agent": "x" * 600}, "agent is longer than 512"),
        ("/api/v1/runs", {"tool": "a\x00b"}, "tool contains a NUL"),
        ("/api/v1/runs/not-a-trace", {}, "trace_id must be 32 hex"),
        ("/api/v1/tools", {"group_by": "tool"}, "group_by='tool' is not one of agent"),
        ("/api/v1/tools", {"since": "2026-02-30"}, "since="),
        ("/api/v1/overview", {"until": "2026-01-01T00:00:00+25:00"}, "until="),
        ("/api/v1/overview", {"since": "2026-01-02", "until": "2026-01-02"}, "since must be before until"),
        ("/api/v1/overview", {"since": "-1h", "until": "-1h"}, "since must be before until"),
        ("/api/v1/stalls", {"stuck_after": "21600"}, "stuck_after=21600 is out of range [1, 21599]"),
        ("/api/v1/terminations", {"bucket": "0"}, "bucket=0 is out of range"),
        (
            "/api/v1/terminations",
            {"bucket": "1", "since": "2020-01-01", "until": "2026-01-01"},
            "more than 10000 buckets",
        ),
    ],
)
def test_bad_parameters_are_400_with_a_reason(client: TestClient, path: str, params: dict, message: str) -> None:
    answer = client.get(path, params=params)
    assert answer.status_code == 400, answer.text
    assert message in answer.json()["error"]


@pytest.mark.parametrize(
    ("paths", "params"),
    [
        (("/api/v1/runs", "/api/v1/tools", "/api/v1/terminations"), {"agent": "orders' OR '1'='1"}),
        (("/api/v1/runs", "/api/v1/tools", "/api/v1/terminations"), {"service": 'svc-a"; DROP TABLE spans; --'}),
        (("/api/v1/runs", "/api/v1/tools"), {"tool": "search' UNION SELECT * FROM spans --"}),
        (("/api/v1/runs",), {"termination_reason": "completed' OR 'x'='x"}),
        (("/api/v1/runs", "/api/v1/tools", "/api/v1/terminations"), {"agent": "🦆" * 100}),
    ],
)
def test_injection_attempts_are_plain_values(
    world: World, client: TestClient, paths: tuple[str, ...], params: dict
) -> None:
    for path in paths:
        answer = client.get(path, params=params)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert not any(value for value in body.values() if isinstance(value, list)), (path, body)
    overview = client.get("/api/v1/overview", params={**params, **CURRENT})
    assert overview.status_code == 200
    assert len(client.get("/api/v1/runs").json()["runs"]) == len(world.runs)


def test_relative_times_and_bounds_are_accepted(client: TestClient) -> None:
    for path in ("/api/v1/runs", "/api/v1/tools", "/api/v1/overview", "/api/v1/terminations"):
        answer = client.get(path, params={"since": "-15m"})
        assert answer.status_code == 200, (path, answer.text)
    assert client.get("/api/v1/runs", params={"limit": "10000", "offset": "1000000000"}).json() == {
        "runs": [],
        "total": 8,
    }
    assert client.get("/api/v1/overview", params={"since": "0001-01-01", "until": "9999-12-31"}).status_code == 200
    # a window wholly before 1970 is in order (empty), not "since after until" once read as 1970
    before = {"since": "1960-01-01T00:00:00Z", "until": "1965-01-01T00:00:01Z"}
    assert client.get("/api/v1/runs", params=before).json() == {"runs": [], "total": 0}
    reversed_ = {"since": "-1h", "until": "-2h"}
    for path, extra in (("/api/v1/runs", {}), ("/api/v1/overview", {}), ("/api/v1/alerts/series", {"rule": "r"})):
        answer = client.get(path, params={**reversed_, **extra})
        assert answer.status_code == 400 and "since must be before until" in answer.json()["error"], path
    # a start without an end ends now: its buckets are chosen, and counted, up to now
    assert client.get("/api/v1/terminations", params={"since": "-2h"}).json()["bucket_seconds"] == 300
    too_many = client.get("/api/v1/terminations", params={"since": "-36500d", "until": "-0m", "bucket": "1"})
    assert too_many.status_code == 400 and "10000 buckets" in too_many.json()["error"]


def test_runs_answer_their_total_and_a_search(world: World, client: TestClient) -> None:
    body = client.get("/api/v1/runs", params={"limit": "2", **CURRENT}).json()
    assert len(body["runs"]) == 2 and body["total"] == 5  # R1..R5 in the current day, whatever the page
    assert client.get("/api/v1/runs", params={"status": "error", "limit": "1"}).json()["total"] == 2
    by_agent = client.get("/api/v1/runs", params={"q": "BILL"}).json()  # part of an agent, any case
    assert sorted(names(world, by_agent["runs"])) == ["P2", "R3", "R4"] and by_agent["total"] == 3
    by_tool = client.get("/api/v1/runs", params={"q": "refund"}).json()
    assert sorted(names(world, by_tool["runs"])) == ["P2", "R3", "R4"]
    trace = world.runs["R2"].trace_id
    assert names(world, client.get("/api/v1/runs", params={"q": trace[:10]}).json()["runs"]) == ["R2"]
    assert client.get("/api/v1/runs", params={"q": "no-such-thing-anywhere"}).json() == {"runs": [], "total": 0}
    assert client.get("/api/v1/runs", params={"q": "x" * 300}).status_code == 400


def test_values_loops_and_stalls_counts(world: World, client: TestClient) -> None:
    agents = client.get("/api/v1/values", params={"field": "agent"}).json()
    assert agents["values"] == [{"value": "orders", "runs": 5}, {"value": "billing", "runs": 3}]
    tools = {v["value"]: v["runs"] for v in client.get("/api/v1/values", params={"field": "tool"}).json()["values"]}
    assert tools["search"] == 4 and tools["refund"] == 3
    assert client.get("/api/v1/values", params={"field": "model"}).status_code == 400
    loops = client.get("/api/v1/loops", params={"limit": "0"}).json()
    assert loops["loops"] == [] and loops["total"] == sum(loops["counts"].values()) >= 1
    (row,) = client.get("/api/v1/loops", params={"kind": "exact", **CURRENT}).json()["loops"]
    assert row["agent"] == "orders" and row["started_at"].startswith("2026-01-11")
    over = client.get("/api/v1/loops/over_time", params={"bucket": "86400"}).json()
    assert over["bucket_seconds"] == 86400 and sum(b["runs"] for b in over["buckets"]) == 8
    stalls = client.get("/api/v1/stalls", params={"limit": "1"}).json()
    assert sum(stalls["counts"].values()) >= len(stalls["stalls"])
    assert all(s["agent"] in ("orders", "billing", None) for s in client.get("/api/v1/stalls").json()["stalls"])


def test_a_run_with_two_loops_counts_its_wasted_tokens_once_everywhere(tmp_path) -> None:
    """``/loops/over_time`` and ``/loops/tools`` summed ``wasted_tokens`` over loops, so a run with
    two loops (the same failing call three times: exact and repeated_error) counted twice."""
    from analytics_fixture import T0, Call, Recorder, Step

    from loopsight.stores.duckdb_store import Store

    store = Store.open(str(tmp_path / "two-loops.duckdb"))
    recorder = Recorder()
    failing = Call("search", "s9", error_class="permanent", error_type="not_found")
    recorder.run(agent="orders", start=T0, steps=[Step(100 * (i + 1), 10, [failing]) for i in range(4)])
    recorder.ingest(store)
    try:
        client = TestClient(create_app(store, Settings()))
        window = {"since": T0.isoformat(), "until": (T0 + timedelta(days=1)).isoformat()}
        loops = client.get("/api/v1/loops", params=window).json()
        assert sorted(loop["kind"] for loop in loops["loops"]) == ["exact", "repeated_error"]
        assert loops["looping_runs"] == 1 and loops["wasted_tokens"] > 0
        over = client.get("/api/v1/loops/over_time", params={**window, "bucket": "86400"}).json()["buckets"]
        assert sum(b["wasted_tokens"] for b in over) == loops["wasted_tokens"]
        assert [(b["looping_runs"], b["exact"], b["repeated_error"]) for b in over if b["runs"]] == [(1, 1, 1)]
        (tool,) = client.get("/api/v1/loops/tools", params=window).json()["tools"]
        assert (tool["tool"], tool["loops"], tool["runs"]) == ("search", 2, 1)
        assert tool["wasted_tokens"] == loops["wasted_tokens"]
    finally:
        store.close()
