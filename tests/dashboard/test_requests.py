"""What each page asks a real collector: the request URLs its client sends (observed on the client's
connection pool), so that no picker or count is filled by listing thousands of rows."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from dashboard_helpers import assert_clean, page
from dashboard_traffic import emit_to_collector

from loopsight import client
from loopsight.dashboard import ui

PAGES = ["overview", "runs", "sessions", "stalls", "loops", "burn", "tools", "budgets", "alerts"]
# At most this many requests a page's first view sends (sidebar included), cache cold.
MAX_REQUESTS = 14


@pytest.fixture
def requests_seen() -> Iterator[list[httpx.URL]]:
    """The URLs the dashboard's HTTP client requests while the test runs."""
    seen: list[httpx.URL] = []
    pool = client._http()
    hooks = pool.event_hooks
    pool.event_hooks = {**hooks, "request": [*hooks.get("request", []), lambda request: seen.append(request.url)]}
    try:
        yield seen
    finally:
        pool.event_hooks = hooks


def _asked(urls: list[httpx.URL]) -> list[tuple[str, dict[str, str]]]:
    return [(urlsplit(str(u)).path, {k: v[0] for k, v in parse_qs(urlsplit(str(u)).query).items()}) for u in urls]


def test_no_page_lists_thousands_of_rows(start_collector, make_app, requests_seen) -> None:
    collector = start_collector()
    emit_to_collector(collector.url, rounds=1)
    for name in PAGES:
        requests_seen.clear()
        app = page(make_app(collector=collector.url), name)
        assert_clean(app)
        asked = _asked(requests_seen)
        assert len(asked) <= MAX_REQUESTS, (name, asked)
        for path, params in asked:
            limit = int(params.get("limit", 0))
            if path == "/api/v1/runs":
                assert limit <= max(ui.RUNS_PAGE, ui.PICK_LIMIT), (name, params)
            if path == "/api/v1/loops":
                assert limit <= ui.LISTED_LOOPS, (name, params)
        fields = {params.get("field") for path, params in asked if path == "/api/v1/values"}
        assert {"agent", "service"} <= fields, f"{name}: the sidebar's pickers come from /api/v1/values"
        if name == "runs":
            assert "tool" in fields, "the Used tool picker too"
        if name == "loops":
            assert "/api/v1/loops/over_time" in {p for p, _ in asked}, "loops over time are counted on the server"
            assert not [p for p, q in asked if p == "/api/v1/runs" and int(q.get("limit", 0)) > 1], asked
