"""The one formatter (dashboard/format.py) and the colour scales (dashboard/colors.py): pure functions."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pandas as pd
import pytest

from loopsight.dashboard import colors
from loopsight.dashboard import format as fmt

MISSING = [None, float("nan"), math.nan, pd.NaT, pd.NA]


@pytest.mark.parametrize("value", MISSING)
def test_missing_values_print_as_an_em_dash(value) -> None:
    for shown in (
        fmt.number(value),
        fmt.count(value),
        fmt.tokens(value),
        fmt.tokens(value, compact=True),
        fmt.duration(value),
        fmt.pct(value),
        fmt.usd(value),
        fmt.timestamp(value),
        fmt.text(value),
        fmt.seconds(value),
    ):
        assert shown == "—"
    assert fmt.delta(value, "count") is None


@pytest.mark.parametrize(
    ("ms", "shown"),
    [
        (0, "0 ms"),
        (0.042, "0.04 ms"),
        (3.25, "3.2 ms"),
        (9.96, "10 ms"),
        (412, "412 ms"),
        (999.7, "1.00 s"),
        (2410, "2.41 s"),
        (9_996, "10.0 s"),
        (30_000, "30.0 s"),
        (59_999, "1.0 min"),
        (668_101.671, "11.1 min"),
        (818_837, "13.6 min"),  # the stuck run the issue saw as "818837 ms"
        (3_599_000, "1.0 h"),
        (7_200_000, "2.0 h"),
        (36 * 3_600_000, "36.0 h"),
    ],
)
def test_durations_pick_their_unit_by_size(ms: float, shown: str) -> None:
    assert fmt.duration(ms) == shown
    assert fmt.duration(-ms) == (shown if ms == 0 else f"-{shown}")


def test_numbers_and_tokens_have_thousands_separators() -> None:
    assert fmt.number(1518) == "1,518" and fmt.count(1_234_567) == "1,234,567"
    assert fmt.number(14720.0) == "14,720", "never 1.472e+04"
    assert fmt.number(0.256, 2) == "0.26"
    assert [fmt.tokens(v) for v in (7, 1518, 115_234)] == ["7", "1,518", "115,234"]
    assert [fmt.tokens(v, compact=True) for v in (999, 1518, 99_949, 115_234, 999_600, 2_345_678)] == [
        "999",
        "1.5 k",
        "99.9 k",
        "115 k",
        "1.0 M",
        "2.3 M",
    ]


def test_money_is_ready_for_costs() -> None:
    assert [fmt.usd(v) for v in (4.2, 1234.5, 0.004, 0.005, 0, -2)] == [
        "$4.20",
        "$1,234.50",
        "<$0.01",
        "$0.01",
        "$0.00",
        "-$2.00",
    ]


def test_percentages_and_ratios() -> None:
    assert [fmt.pct(v) for v in (0.1234, 1, 0, 0.00001, 0.0006)] == ["12.3%", "100.0%", "0.0%", "<0.1%", "0.1%"]
    assert fmt.ratio(231.8) == "231.8×"
    assert fmt.delta(0.021, "rate") == "+2.1 pts" and fmt.delta(-1200, "ms") == "-1.20 s"
    assert fmt.delta(40, "count") == "+40"


def test_timestamps_are_utc_on_a_24_hour_clock_and_say_so() -> None:
    evening = datetime(2026, 1, 1, 22, 5, 9, tzinfo=timezone(timedelta(hours=2)))
    assert fmt.timestamp(evening) == "2026-01-01 20:05:09 UTC"
    assert fmt.timestamp("2026-01-01T22:05:09.5Z") == "2026-01-01 22:05:09 UTC"
    assert fmt.timestamp(pd.Timestamp("2026-01-01 07:00"), label=False, seconds=False) == "2026-01-01 07:00"
    assert fmt.timestamp(datetime(2026, 1, 1, 13, 0, tzinfo=UTC)).endswith("13:00:00 UTC"), "no 1 PM"
    assert fmt.timestamp("not a time") == "—"


def test_text_of_any_cell() -> None:
    assert [fmt.text(v) for v in (1518, 0.13333, 2.0, 14720.5, "ok", [1, 2], True)] == [
        "1,518",
        "0.1333",
        "2",
        "14,720",
        "ok",
        "[1, 2]",
        "True",
    ]


def test_refresh_intervals_read_as_settings() -> None:
    assert [fmt.seconds(v) for v in (10, 30, 60, 300)] == ["10 s", "30 s", "1 min", "5 min"]


def test_a_seconds_budget_is_shown_as_recommended_not_rounded_down() -> None:
    """The Budgets page showed the advisor's 0.12 s as "0.1 s" (a third of good runs cut at that
    value) and 0.04 s as "0 s"; candidate values shared labels."""
    from loopsight.dashboard.pages.budgets import value_text

    values = (0.001, 0.04, 0.12, 0.15, 0.25, 1.234, 61.5, 95, 90)
    shown = [value_text("seconds", v) for v in values]
    assert shown == ["0.001 s", "0.04 s", "0.12 s", "0.15 s", "0.25 s", "1.234 s", "61.5 s", "95 s", "1.5 min"]
    assert len(set(shown)) == len(values)


def test_each_meaning_has_one_fixed_colour_whatever_is_shown() -> None:
    """The scale's domain is the whole vocabulary: a kind keeps its colour when a filter hides the others."""
    alone = colors.scale("loop_kind", ["semantic"]).to_dict()
    every = colors.scale("loop_kind", list(colors.LOOP_KIND)).to_dict()
    assert alone == every
    assert dict(zip(alone["domain"], alone["range"], strict=True))["semantic"] == colors.LOOP_KIND["semantic"]
    assert colors.STATUS == {"ok": colors.OK, "error": colors.ERROR}
    assert colors.TERMINATION["completed"] == colors.OK and colors.TERMINATION["error"] == colors.ERROR
    assert colors.SPAN_KIND["failed"] == colors.ERROR
    assert set(colors.STALL_KIND) == {"slow_call", "backoff", "idle_gap", "stuck"}
    assert set(colors.LOOP_KIND) == {"exact", "oscillation", "repeated_error", "semantic", "no_progress"}
    for meaning in ("error_class", "loop_kind", "stall_kind", "termination_reason"):
        shades = list(colors.SCALES[meaning].values())
        assert len(set(shades)) == len(shades), f"{meaning}: two values share a colour"
    unknown = colors.scale("termination_reason", ["brand_new_reason"]).to_dict()
    assert unknown["range"][unknown["domain"].index("brand_new_reason")] == colors.NEUTRAL


def test_agent_colours_do_not_depend_on_the_agents_shown() -> None:
    universe = ["order-assistant", "research-agent", "refund-bot"]
    both = colors.stable(["order-assistant", "research-agent"], universe).to_dict()
    one = colors.stable(["research-agent"], universe).to_dict()
    assert dict(zip(both["domain"], both["range"], strict=True))["research-agent"] == one["range"][0]
    assert len(set(colors.stable(universe, universe).to_dict()["range"])) == 3


def test_negative_money_mirrors_positive_and_minus_zero_is_zero() -> None:
    # what a prompt cache saved is negative when its writes cost more than its reads saved; a sum
    # that cancels out comes back from round(..., 9) as -0.0
    assert [fmt.usd(v, precise=True) for v in (-0.00001, -0.0042, 0.00001, 0.0042)] == [
        "-<$0.0001",
        "-$0.0042",
        "<$0.0001",
        "$0.0042",
    ]
    assert [fmt.usd(v) for v in (-0.0, -0.0, -0.004, -2)] == ["$0.00", "$0.00", "-<$0.01", "-$2.00"]
    assert fmt.usd(-0.0, precise=True) == "$0.00" and fmt.money(-0.0, 0) == "$0.00"
