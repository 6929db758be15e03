"""Alert metrics and ``alerts check --store chdb://…`` on ClickHouse answer as on DuckDB."""

from __future__ import annotations

import io
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from loopsight.alerts import MetricSpec, check, gauges, judge, measure, parse_rules
from loopsight.alerts.evaluator import utcnow
from loopsight.analytics.metrics import ReaderMeasures

from .test_parity import _same

SINCE, UNTIL = datetime(2025, 3, 1, 9, 0), datetime(2025, 3, 1, 11, 0)

SPECS = [
    MetricSpec("loop_rate"),
    MetricSpec("loop_rate", tool="search"),
    MetricSpec("tool_fail_rate"),
    MetricSpec("tool_fail_rate", tool="search", error_class="transient"),
    MetricSpec("error_class_rate", error_class="transient"),
    MetricSpec("error_class_rate", error_class="permanent", agent="order-assistant"),
    MetricSpec("termination_rate", reason="loop_detected"),
    MetricSpec("termination_rate", reason="completed", service="gateway"),
    MetricSpec("tokens_per_run", stat="p50"),
    MetricSpec("tokens_per_run", stat="max", agent="researcher"),
    MetricSpec("stall_rate"),
    MetricSpec("stuck_runs", stuck_after_seconds=60),
]


@pytest.mark.parametrize("spec", SPECS, ids=[f"{s.metric}:{','.join(map(str, s.filters().values()))}" for s in SPECS])
def test_alert_metrics_are_the_same(duck: Any, clickhouse: Any, spec: MetricSpec) -> None:
    expected = measure(duck, spec, SINCE, UNTIL)
    got = measure(clickhouse, spec, SINCE, UNTIL)
    assert _same(got.to_dict()) == _same(expected.to_dict())


def test_a_metric_with_nothing_to_measure_is_none_on_both(duck: Any, clickhouse: Any) -> None:
    for spec in (MetricSpec("tool_fail_rate", agent="nobody"), MetricSpec("tokens_per_run", agent="nobody")):
        assert measure(clickhouse, spec, SINCE, UNTIL) == measure(duck, spec, SINCE, UNTIL)
        assert measure(clickhouse, spec, SINCE, UNTIL).value is None


def test_gauges_are_the_same(duck: Any, clickhouse: Any) -> None:
    expected = gauges(duck, SINCE, UNTIL)
    assert [(g.name, round(g.value, 6), g.labels) for g in gauges(clickhouse, SINCE, UNTIL)] == [
        (g.name, round(g.value, 6), g.labels) for g in expected
    ]


# A window reaching back to the fixture's day (2025-03-01) from today.
RULES = """
[[rules]]
name = "loops"
metric = "loop_rate"
window = "{days}d"
threshold = 0.1
min_samples = 3

[[rules]]
name = "search-failing"
metric = "tool_fail_rate"
tool = "search"
window = "{days}d"
threshold = 0.9
min_samples = 1

[[rules]]
name = "token-burn"
metric = "tokens_per_run"
stat = "max"
window = "{days}d"
threshold = 5000
"""


def test_alerts_check_on_a_clickhouse_store(tmp_path: Path, duck: Any, clickhouse: Any, chdb_dir: Path) -> None:
    days = (utcnow() - SINCE).days + 30
    path = tmp_path / "rules.toml"
    path.write_text(RULES.format(days=days))
    out = io.StringIO()
    code = check(
        str(path), store=f"chdb://{chdb_dir}?database=parity", console=Console(file=out, width=250, color_system=None)
    )
    text = out.getvalue()
    expected = [
        rule.name for rule in parse_rules(RULES.format(days=days)) if judge(ReaderMeasures(duck), rule, utcnow()).met
    ]
    assert expected == ["loops", "token-burn"]
    assert code == 1 and f"2 rule(s) firing: {', '.join(expected)}" in text, text
    assert "chdb://" in text


def test_alerts_check_with_an_unusable_store_says_why(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(RULES.format(days=1))
    for url, why in [
        ("ftp://x", "unknown store scheme"),
        (f"duckdb://{tmp_path}/missing.duckdb", "does not exist"),
        ("clickhouse://127.0.0.1:1/db", "ClickHouse"),
    ]:
        out = io.StringIO()
        assert check(str(path), store=url, console=Console(file=out, width=250, color_system=None)) == 2
        assert why in out.getvalue() and "Traceback" not in out.getvalue()
