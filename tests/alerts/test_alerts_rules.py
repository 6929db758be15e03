"""Rules files: the issue's example parses; every kind of mistake names file, line, rule and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopsight.alerts import RulesError, load_rules, parse_duration, parse_rules

EXAMPLE = """\
[[rules]]
name = "loop-rate"
metric = "loop_rate"
window = "5m"
threshold = 0.3
min_samples = 5
for = "0s"
cooldown = "30m"
notify = ["webhook:http://127.0.0.1:9000/hook"]

[[rules]]
name = "fetch-failing"
metric = "tool_fail_rate"
tool = "fetch"
window = "5m"
baseline = "1h"        # spike mode: current window against the baseline window before it
factor = 3
threshold = 0.2
min_samples = 5
notify = ["slack:https://hooks.example.com/T000/B000/XXX", "log"]
"""


def test_issue_example_parses() -> None:
    loop, fetch = parse_rules(EXAMPLE)
    assert (loop.name, loop.metric, loop.window_seconds, loop.threshold, loop.min_samples) == (
        "loop-rate",
        "loop_rate",
        300,
        0.3,
        5,
    )
    assert (loop.for_seconds, loop.cooldown_seconds, loop.spike) == (0, 1800, False)
    assert loop.notify[0].kind == "webhook" and loop.notify[0].url == "http://127.0.0.1:9000/hook"
    assert fetch.spike and fetch.baseline_seconds == 3600 and fetch.factor == 3 and fetch.spec.tool == "fetch"
    assert [t.kind for t in fetch.notify] == ["slack", "log"]
    # secrets in webhook paths never leave through the API
    assert fetch.describe()["notify"] == ["slack:https://hooks.example.com/…", "log"]


def test_defaults_per_metric() -> None:
    rules = parse_rules("""
[[rules]]
name = "t"
metric = "tokens_per_run"
window = "1h"
threshold = 50000
[[rules]]
name = "s"
metric = "stuck_runs"
window = "1h"
""")
    assert rules[0].spec.stat == "p95" and rules[0].min_samples == 1 and rules[0].op == ">="
    assert rules[1].threshold == 1 and rules[1].min_samples == 0 and rules[1].spec.stuck_after_seconds == 300
    assert repr(rules[1].describe()["filters"]) == "{'stuck_after': 300}"  # shown as 300, not 300.0


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            EXAMPLE.replace("factor = 3", 'factor = "three"'),
            "r.toml:17: rule 'fetch-failing', key 'factor': must be a finite number",
        ),
        (
            EXAMPLE.replace("threshold = 0.3", "treshold = 0.3"),
            "r.toml:5: rule 'loop-rate', key 'treshold': unknown key (did you mean 'threshold'?)",
        ),
        (
            EXAMPLE.replace('window = "5m"\nbaseline', 'window = "5 minutes"\nbaseline'),
            "r.toml:15: rule 'fetch-failing', key 'window': '5 minutes' is not a duration",
        ),
        (
            EXAMPLE.replace("threshold = 0.3", "threshold = inf"),
            "r.toml:5: rule 'loop-rate', key 'threshold': must be a finite number, got inf",
        ),
        (  # a window past year 1 broke the evaluation of every rule
            EXAMPLE.replace('window = "5m"\nbaseline', 'window = "1000000d"\nbaseline'),
            "r.toml:15: rule 'fetch-failing', key 'window': '1000000d' is longer than 100 years",
        ),
        (
            EXAMPLE.replace('window = "5m"\nbaseline', 'window = "99999999999999999999s"\nbaseline'),
            "r.toml:15: rule 'fetch-failing', key 'window': '99999999999999999999s' is longer than 100 years",
        ),
        (
            EXAMPLE.replace("threshold = 0.2", 'threshold = 0.2\nreason = "timeout"'),
            "r.toml:19: rule 'fetch-failing', key 'reason': does not apply to metric 'tool_fail_rate'",
        ),
        (
            EXAMPLE.replace('metric = "loop_rate"', 'metric = "loop_rat"'),
            "r.toml:3: rule 'loop-rate', key 'metric': 'loop_rat' is not one of",
        ),
        (
            EXAMPLE.replace("threshold = 0.3", "threshold = 30"),
            "r.toml:5: rule 'loop-rate', key 'threshold': loop_rate is a fraction between 0 and 1",
        ),
        (
            EXAMPLE.replace('"webhook:http://127.0.0.1:9000/hook"', '"pager:duty"'),
            "r.toml:9: rule 'loop-rate', key 'notify': 'pager:duty'",
        ),
        (
            EXAMPLE.replace('"webhook:http://127.0.0.1:9000/hook"', '"webhook:ftp://x/y"'),
            "r.toml:9: rule 'loop-rate', key 'notify': 'webhook:ftp://x/y': webhook needs an http(s) URL",
        ),
        (
            EXAMPLE.replace("min_samples = 5\nfor", "min_samples = -1\nfor"),
            "r.toml:6: rule 'loop-rate', key 'min_samples': must be a whole number >= 0",
        ),
        (
            EXAMPLE.replace('name = "fetch-failing"', 'name = "loop-rate"'),
            "r.toml:12: rule 'loop-rate', key 'name': duplicate name",
        ),
        (EXAMPLE.replace('name = "fetch-failing"\n', ""), "r.toml:11: rule #2: missing required key 'name'"),
        (
            EXAMPLE.replace(
                'baseline = "1h"        # spike mode: current window against the baseline window before it\n', ""
            ),
            "r.toml:16: rule 'fetch-failing', key 'factor': only applies in spike mode",
        ),
        (
            EXAMPLE.replace('[[rules]]\nname = "fetch', '[[rules]\nname = "fetch'),
            "r.toml: not valid TOML: Expected ']]' at the end of an array declaration (at line 11",
        ),
        ("title = 'x'\n" + EXAMPLE, "r.toml:1: unknown top-level key 'title'"),
        (
            '[[rules]]\nname = "x"\nmetric = "termination_rate"\nwindow = "5m"\nthreshold = 0.5\n',
            "r.toml:1: rule 'x': metric 'termination_rate' needs reason",
        ),
        (
            '[[rules]]\nname = "x"\nmetric = "stuck_runs"\nwindow = "5m"\n',
            "r.toml:4: rule 'x', key 'window': must be longer than stuck_after (5m)",
        ),
        (  # an integer of 400 digits: OverflowError and a traceback, exit 1 ("firing"), before
            EXAMPLE.replace("factor = 3", "factor = 1" + "0" * 400),
            "r.toml:17: rule 'fetch-failing', key 'factor': must be a finite number, got 1000000000",
        ),
        (
            EXAMPLE.replace('"webhook:http://127.0.0.1:9000/hook"', '"webhook:http://[::1/hook"'),
            "r.toml:9: rule 'loop-rate', key 'notify': 'webhook:http://[::1/hook': not a URL (Invalid IPv6 URL)",
        ),
        (  # passed, and skipped the rule's other targets at delivery
            EXAMPLE.replace('"webhook:http://127.0.0.1:9000/hook"', '"webhook:http://127.0.0.1:abc/x"'),
            "r.toml:9: rule 'loop-rate', key 'notify': 'webhook:http://127.0.0.1:abc/x': not a URL (Port could not",
        ),
        (  # what `alerts check --collector` would have been refused by the API
            EXAMPLE.replace('tool = "fetch"', f'tool = "{"x" * 600}"'),
            "r.toml:14: rule 'fetch-failing', key 'tool': is longer than 512 characters",
        ),
        (
            '[[rules]]\nname = "x"\nmetric = "loop_rate"\nwindow = "500ms"\nthreshold = 0.5\n',
            "r.toml:4: rule 'x', key 'window': must be at least 1s",
        ),
        (
            '[[rules]]\nname = "x"\nmetric = "stuck_runs"\nwindow = "400d"\nstuck_after = "399d"\n',
            "r.toml:5: rule 'x', key 'stuck_after': must be at most 366d",
        ),
        (
            '[[rules]]\nname = "x"\nmetric = "tokens_per_run"\nwindow = "5m"\nthreshold = 9\ntool = "a"\n',
            "r.toml:6: rule 'x', key 'tool': does not apply to metric 'tokens_per_run'",
        ),
    ],
)
def test_invalid_rules_name_the_line(text: str, expected: str) -> None:
    with pytest.raises(RulesError) as info:
        parse_rules(text, "r.toml")
    assert str(info.value).startswith(expected), str(info.value)


def test_a_rules_file_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    saved_by_notepad = tmp_path / "r.toml"
    saved_by_notepad.write_bytes(b"\xef\xbb\xbf" + EXAMPLE.encode())
    assert [r.name for r in load_rules(saved_by_notepad)] == ["loop-rate", "fetch-failing"]


def test_a_password_in_a_webhook_url_is_never_shown() -> None:
    (rule,) = parse_rules(
        '[[rules]]\nname = "x"\nmetric = "loop_rate"\nwindow = "5m"\nthreshold = 0.5\n'
        'notify = ["webhook:http://alice:S3cr3t@127.0.0.1:9004/hook?token=abc", "webhook:https://[::1]/h"]\n'
    )
    assert rule.describe()["notify"] == ["webhook:http://127.0.0.1:9004/…", "webhook:https://[::1]/…"]


def test_load_rules_missing_and_unreadable(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="rules file not found"):
        load_rules(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"\xff\xfe[[rules]]")
    with pytest.raises(RulesError, match="cannot read the rules file"):
        load_rules(bad)


@pytest.mark.parametrize(
    "text, seconds",
    [("30s", 30), ("5m", 300), ("1h", 3600), ("1h30m", 5400), ("250ms", 0.25), ("0s", 0), ("2d", 172800)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5", "5 m", "m5", "-5m", "5min", 5, "5२m", "36501d", "1e9s"])
def test_bad_durations(text: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)  # type: ignore[arg-type]
