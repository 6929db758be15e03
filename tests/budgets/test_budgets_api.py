"""The budget advisor through the query API of the real app (``/api/v1/budgets``, ``/api/v1/budgets/runs``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from loopsight.analytics.budgets import budget_replay, budgets
from loopsight.collector.app import Settings, create_app


@pytest.fixture(scope="module")
def client(budget_world: Any) -> Iterator[TestClient]:
    with TestClient(create_app(budget_world.store, Settings())) as test_client:
        yield test_client


def test_budgets_route_answers_the_design_shape(client: TestClient, con: Any) -> None:
    answer = client.get("/api/v1/budgets", params={"agent": "planner"})
    assert answer.status_code == 200
    body = answer.json()
    assert body == budgets(con, agent="planner")
    (entry,) = body["agents"]
    assert {"agent", "runs", "ok_runs", "budgets"} <= set(entry)
    for budget in entry["budgets"]:
        assert {"kind", "recommended", "curve"} <= set(budget)
        assert budget["kind"] in ("steps", "tool_calls", "seconds", "tokens")
        for point in budget["curve"]:
            assert {"value", "ok_runs_cut", "bad_runs_cut", "tokens_saved", "cost_saved_usd"} <= set(point)
    grouped = client.get("/api/v1/budgets", params={"group_by": "service", "since": "2026-01-01T00:00:00Z"}).json()
    assert [(a["agent"], a["service"]) for a in grouped["agents"]] == [
        ("planner", "svc-a"),
        ("planner", "svc-b"),
        ("tiny", "svc-a"),
    ]
    assert client.get("/api/v1/budgets", params={"until": "2000-01-01T00:00:00Z"}).json() == {"agents": []}


def test_budget_runs_route(client: TestClient, con: Any) -> None:
    answer = client.get("/api/v1/budgets/runs", params={"agent": "planner", "kind": "steps", "value": "5"})
    assert answer.status_code == 200
    assert answer.json()["runs"] == budget_replay(con, agent="planner", kind="steps", value=5)
    assert [r["outcome"] for r in answer.json()["runs"]] == ["looped", "looped", "budget"]
    every = client.get("/api/v1/budgets/runs", params={"kind": "seconds", "value": "0.08", "only_cut": "false"})
    assert len(every.json()["runs"]) == 28


@pytest.mark.parametrize(
    ("path", "params", "says"),
    [
        ("/api/v1/budgets", {"since": "yesterday"}, "since="),
        ("/api/v1/budgets", {"since": "2026-01-02T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, "since must be before"),
        ("/api/v1/budgets", {"group_by": "agent"}, "group_by="),
        ("/api/v1/budgets", {"agent": "x" * 513}, "agent is longer"),
        ("/api/v1/budgets/runs", {"value": "3"}, "kind (steps, tool_calls, seconds, tokens) and value are required"),
        ("/api/v1/budgets/runs", {"kind": "turns", "value": "3"}, "kind='turns' is not one of"),
        ("/api/v1/budgets/runs", {"kind": "steps"}, "are required"),
        ("/api/v1/budgets/runs", {"kind": "steps", "value": "many"}, "value='many' is not a number"),
        ("/api/v1/budgets/runs", {"kind": "steps", "value": "-1"}, "out of range"),
        ("/api/v1/budgets/runs", {"kind": "steps", "value": "nan"}, "out of range"),
        ("/api/v1/budgets/runs", {"kind": "steps", "value": "1", "only_cut": "yes"}, "only_cut="),
        ("/api/v1/budgets/runs", {"kind": "steps", "value": "1", "limit": "-1"}, "limit="),
    ],
)
def test_bad_parameters_are_400_naming_them(client: TestClient, path: str, params: dict[str, str], says: str) -> None:
    answer = client.get(path, params=params)
    assert answer.status_code == 400
    assert says in answer.json()["error"]


def test_a_quote_in_a_filter_is_a_value_not_sql(client: TestClient) -> None:
    answer = client.get("/api/v1/budgets", params={"agent": "planner' OR '1'='1"})
    assert answer.status_code == 200 and answer.json() == {"agents": []}
