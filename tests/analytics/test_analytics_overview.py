"""Overview KPI tiles against the previous window, and termination reasons over time."""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb
import pytest
from analytics_fixture import T0, quantile
from analytics_world import CURRENT, DAY, World

from loopsight.analytics import overview, terminations
from loopsight.analytics.overview import marked_loop_runs
from loopsight.analytics.terminations import auto_bucket_seconds


def durations(world: World, *names: str) -> list[float]:
    return [world.runs[name].duration_ms for name in names]


def test_tiles_with_the_previous_window(world: World, con: duckdb.DuckDBPyConnection) -> None:
    result = overview(con, **CURRENT)
    assert result["window"] == {"since": "2026-01-11T00:00:00.000000Z", "until": "2026-01-12T00:00:00.000000Z"}
    assert result["previous_window"] == {"since": "2026-01-10T00:00:00.000000Z", "until": "2026-01-11T00:00:00.000000Z"}
    tiles = result["tiles"]
    expected = {
        # current: R1..R5 (ok: R1, R5; loop: R2; tool calls 9, failed 3); previous: P1, P2.
        "runs": (5, 2),
        "success_rate": (0.4, 0.5),
        "loop_rate": (0.2, 0.0),
        "tool_fail_rate": (3 / 9, 1 / 2),
        "tokens_per_success": ((1100 + 1200) / 2, 55.0),
        "p95_duration_ms": (
            quantile(durations(world, "R1", "R2", "R3", "R4", "R5"), 0.95),
            quantile(durations(world, "P1", "P2"), 0.95),
        ),
    }
    # money: this world's model (gpt-test) has no price: the cost tiles say unknown, never $0
    expected["cost_usd"] = expected["cost_per_success_usd"] = (None, None)
    assert set(tiles) == set(expected)
    for name, (value, previous) in expected.items():
        tile = tiles[name]
        assert tile["value"] == pytest.approx(value) and tile["previous"] == pytest.approx(previous), name
        if value is None:
            assert tile["change"] is None and tile["change_pct"] is None, name
            continue
        assert tile["change"] == pytest.approx(value - previous), name
        assert tile["change_pct"] == (pytest.approx((value - previous) / previous) if previous else None), name


def test_filters_and_empty_windows(con: duckdb.DuckDBPyConnection) -> None:
    billing = overview(con, agent="billing", **CURRENT)["tiles"]
    assert (billing["runs"]["value"], billing["success_rate"]["value"], billing["tokens_per_success"]["value"]) == (
        2,
        0.0,
        None,
    )
    assert billing["tool_fail_rate"]["value"] == pytest.approx(2 / 3)
    empty = overview(con, since=datetime(2020, 1, 1), until=datetime(2020, 1, 2))["tiles"]
    assert empty["runs"] == {"value": 0, "previous": 0, "change": 0, "change_pct": None}
    assert all(
        empty[name]["value"] is None
        for name in ("success_rate", "loop_rate", "tool_fail_rate", "tokens_per_success", "p95_duration_ms")
    )


def test_default_window_is_the_last_day_before_now(con: duckdb.DuckDBPyConnection) -> None:
    result = overview(con, now=T0 + 2 * DAY)
    assert result["window"]["since"] == "2026-01-11T00:00:00.000000Z"
    assert result["tiles"]["runs"]["value"] == 5
    with pytest.raises(ValueError, match="since must be before until"):
        overview(con, since=T0 + DAY, until=T0)


def test_loop_detection_is_swappable(con: duckdb.DuckDBPyConnection) -> None:
    seen = []

    def every_billing_run_loops(con, *, since, until, agent, service):  # type: ignore[no-untyped-def]
        seen.append((since, until))
        return con.execute(
            "SELECT count(*) FROM spans WHERE span_type = 'agent' AND \"SpanId\" = run_id AND agent = 'billing'"
            ' AND "Timestamp" >= $since AND "Timestamp" < $until',
            {"since": since, "until": until},
        ).fetchone()[0]

    built_in = overview(con, **CURRENT)["tiles"]["loop_rate"]
    assert overview(con, loop_runs=marked_loop_runs, **CURRENT)["tiles"]["loop_rate"] == built_in
    tiles = overview(con, loop_runs=every_billing_run_loops, **CURRENT)["tiles"]
    assert (tiles["loop_rate"]["value"], tiles["loop_rate"]["previous"]) == (0.4, 0.5)
    assert sorted(seen) == [(T0, T0 + DAY), (T0 + DAY, T0 + 2 * DAY)]


def test_terminations_per_day(con: duckdb.DuckDBPyConnection) -> None:
    result = terminations(con, bucket_seconds=86400)
    rows = [(r["bucket"][:10], r["termination_reason"], r["runs"], r["ok"], r["rate"]) for r in result["terminations"]]
    assert rows == [
        ("2026-01-10", "completed", 1, 1, 0.5),
        ("2026-01-10", "timeout", 1, 0, 0.5),
        ("2026-01-11", "completed", 3, 2, 0.6),
        ("2026-01-11", "loop_detected", 1, 0, 0.2),
        ("2026-01-11", "max_steps", 1, 0, 0.2),
        ("2026-01-12", "completed", 1, 1, 1.0),
    ]
    assert result["totals"][0] == {"termination_reason": "completed", "runs": 5, "ok": 4, "rate": 5 / 8}
    assert sum(t["runs"] for t in result["totals"]) == 8


def test_terminations_hourly_in_a_window(con: duckdb.DuckDBPyConnection) -> None:
    result = terminations(con, bucket_seconds=3600, agent="orders", **CURRENT)
    assert [(r["bucket"], r["termination_reason"]) for r in result["terminations"]] == [
        ("2026-01-11T01:00:00.000000Z", "completed"),
        ("2026-01-11T02:00:00.000000Z", "loop_detected"),
        ("2026-01-11T23:00:00.000000Z", "completed"),
    ]
    assert terminations(con, **CURRENT)["bucket_seconds"] == 1800


def test_success_rule_is_the_same_everywhere(world: World, con: duckdb.DuckDBPyConnection) -> None:
    from loopsight.analytics import list_runs

    ok_runs = sum(r["status"] == "ok" and r["termination_reason"] == "completed" for r in list_runs(con, **CURRENT))
    runs = overview(con, **CURRENT)["tiles"]
    terminated_ok = sum(t["ok"] for t in terminations(con, **CURRENT)["totals"])
    assert ok_runs == terminated_ok == round(runs["success_rate"]["value"] * runs["runs"]["value"]) == 2


@pytest.mark.parametrize("bucket", [0, -5, 400 * 86400])
def test_bad_buckets(con: duckdb.DuckDBPyConnection, bucket: int) -> None:
    with pytest.raises(ValueError, match="out of range"):
        terminations(con, bucket_seconds=bucket)


def test_too_many_buckets(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(ValueError, match="more than 10000 buckets"):
        terminations(con, bucket_seconds=1, since=T0, until=T0 + DAY)


def test_auto_bucket() -> None:
    assert auto_bucket_seconds(T0, T0 + timedelta(hours=1)) == 60
    assert auto_bucket_seconds(T0, T0 + timedelta(days=7)) == 3 * 3600
    assert auto_bucket_seconds(T0, T0 + timedelta(days=3650)) == 7 * 86400
    assert auto_bucket_seconds(None, T0) == 3600
