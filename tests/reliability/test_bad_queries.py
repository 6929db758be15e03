"""Hostile query-API parameters on every /api/v1 route: 200 or 400 with a readable JSON
error, never 500; SQL in a parameter is only ever data; the stored rows are unchanged."""

from __future__ import annotations

import urllib.parse

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reliability_support import rows_checksum

HOSTILE = [
    "' OR 1=1 --",
    "'; DROP TABLE spans; --",
    '" OR ""="',
    "1; SELECT * FROM read_csv('/etc/passwd')",
    "') UNION SELECT * FROM duckdb_settings() --",
    "$1",
    "?",
    "%",
    "_",
    "\\",
    "\x00",
    "\x1b[31m",
    "\ud7ff\ue000",
    "<script>alert(1)</script>",
    "../../../../etc/passwd",
    "a" * 5000,
    "",
    " ",
    "null",
    "[]",
    "{}",
    "-1",
    "0",
    "1e9",
    "NaN",
    "inf",
    "0x10",
    "99999999999999999999999999",
    str(-(2**63)),
    str(2**64),
    "2026-13-45",
    "0001-01-01",
    "9999-12-31T23:59:59",
    "9999-12-31T23:59:59+14:00",
    "0000-00-00",
    "-999999d",
    "-36501d",
    "-99999999999999999999s",
    "-5२m",
    "-0s",
    "-1y",
    "yesterday",
    "2026-01-01T00:00:00Z' --",
    "１２３",
]
PARAMS = [
    "limit",
    "offset",
    "agent",
    "service",
    "status",
    "termination_reason",
    "since",
    "until",
    "tool",
    "group_by",
    "bucket",
    "sort",
    "min_tokens",
    "rule",
    "metric",
    "stuck_after",
    "stuck_after_seconds",
    "error_class",
    "reason",
    "stat",
    "window",
    "step",
    "trace_id",
    "unknown_param",
]


def api_paths() -> list[str]:
    """Every GET route the query API serves (read from the app, so new routes are covered)."""
    from loopsight.collector.api import query_routes

    return sorted({route.path for route in query_routes(lambda: None) if "GET" in (route.methods or ())})


def check(response: httpx.Response) -> None:
    if response.status_code == 307:  # a trailing "/" (the value "/") is sent to the path without it
        assert not response.headers["location"].endswith("/"), response.headers["location"]
        return
    assert response.status_code in (200, 400, 404), (response.request.url, response.status_code, response.text[:300])
    if response.status_code == 404 and not response.headers.get("content-type", "").startswith("application/json"):
        return  # no route matched (e.g. a "/" inside the path parameter)
    doc = response.json()
    if response.status_code != 200:
        assert isinstance(doc.get("error") or doc.get("message"), str), doc


def _url(base: str, path: str, value: str) -> str:
    return base + path.replace("{trace_id}", urllib.parse.quote(value or "x", safe="")).replace(
        "{run_id}", urllib.parse.quote(value or "x", safe="")
    )


def test_every_route_every_parameter_every_hostile_value(seeded_collector) -> None:
    server, ids, before = seeded_collector
    paths = api_paths()
    assert "/api/v1/runs" in paths and len(paths) >= 5, paths
    failures = []
    with httpx.Client(timeout=60) as client:
        for p_index, path in enumerate(paths):
            # every parameter at once gives the first validator a go; then each parameter alone
            # gets an injection and one more value (rotating over routes, so all pairs get tried)
            requests = [({name: value[:200] for name in PARAMS}, value) for value in HOSTILE]
            for i, name in enumerate(PARAMS):
                for value in (HOSTILE[1], HOSTILE[(i + p_index * 5) % len(HOSTILE)]):
                    requests.append(({name: value}, value))
            requests += [
                ({"until": "0001-01-01"}, "x"),
                ({"since": "9999-12-31T23:59:59"}, "x"),
                ({"since": "0001-01-01", "until": "9999-12-31"}, "x"),
                ({"limit": "1000000000000"}, "x"),
            ]
            for params, value in requests:
                try:
                    check(client.get(_url(server.url, path, value), params=params))
                except (AssertionError, httpx.HTTPError, ValueError) as exc:
                    failures.append(f"{path} {params if len(params) == 1 else value[:40]!r}: {str(exc)[:300]}")
        runs = client.get(f"{server.url}/api/v1/runs", params={"limit": 1000}).json()["runs"]
    assert not failures, f"{len(failures)} bad answers, e.g.:\n" + "\n".join(failures[:15])
    assert len(runs) == 3, "SQL in a parameter changed what is stored"
    assert server.stop() == 0
    assert rows_checksum(server.db_path, ids) == before


def test_fuzzed_parameters(collector_server) -> None:
    paths = api_paths()
    client = httpx.Client(timeout=60)

    @settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(
        path=st.sampled_from(paths),
        params=st.dictionaries(
            st.sampled_from(PARAMS), st.one_of(st.text(max_size=80), st.sampled_from(HOSTILE)), max_size=4
        ),
        path_value=st.text(min_size=1, max_size=60),
    )
    def fuzz(path: str, params: dict[str, str], path_value: str) -> None:
        check(client.get(_url(collector_server.url, path, path_value), params=params))

    try:
        fuzz()
    finally:
        client.close()
    assert collector_server.process.poll() is None
    assert "Traceback" not in collector_server.log()


def test_relative_times_take_any_duration_of_at_most_100_years() -> None:
    from datetime import UTC, datetime, timedelta

    from loopsight.collector.api import BadParameter, parse_time

    now = datetime.now(UTC).replace(tzinfo=None)
    got = parse_time("since", "-1h30m")
    assert got is not None and abs((now - got) - timedelta(minutes=90)) < timedelta(seconds=5)
    for bad in ("-36501d", "-99999999999999999999s", "-5२m", "-1y"):
        with pytest.raises(BadParameter, match="since"):
            parse_time("since", bad)


def test_a_time_before_1970_reads_as_1970_on_both_engines(tmp_path) -> None:
    """since=0001-01-01 was a 500 on ClickHouse (it cannot parse year 1); no span starts before 1970."""
    from datetime import datetime

    pytest.importorskip("chdb")
    from loopsight import analytics
    from loopsight.collector.api import BadParameter, parse_time, time_window
    from loopsight.stores import open_reader, open_writer

    since, until = time_window(parse_time("since", "0001-01-01T00:00:00Z"), parse_time("until", "1000-01-01"))
    assert since == datetime(1970, 1, 1) == until
    # in order before they are read as 1970: a window wholly before it is empty, not reversed
    assert time_window(datetime(1960, 1, 1), datetime(1965, 1, 1)) == (since, since)
    with pytest.raises(BadParameter, match="since must be before until"):
        time_window(datetime(1965, 1, 1), datetime(1960, 1, 1))
    from loopsight.stores.clickhouse import chdb_open_path

    url = f"chdb://{chdb_open_path() or tmp_path / 'ch'}?database=before1970"  # one chdb folder a process
    store = open_writer(url)
    try:
        reader = open_reader(url)
        assert analytics.list_runs(reader, since=since) == []
        assert analytics.overview(reader, since=since, until=datetime(2000, 1, 1))["tiles"]["runs"]["value"] == 0
    finally:
        store.close()
