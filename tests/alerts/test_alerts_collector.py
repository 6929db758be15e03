"""`loopsight collector --rules`: the evaluator runs inside the real collector process."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import httpx


RULE = '[[rules]]\nname = "loops"\nmetric = "loop_rate"\nwindow = "5m"\nthreshold = 0.3\nnotify = ["log"]\n'


def test_collector_evaluates_rules_and_exposes_gauges(tmp_path: Path, start_collector: Callable[..., Any]) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULE)
    collector = start_collector("--rules", str(rules), "--alert-interval", "0.2", "--grpc-port", "0")
    deadline = time.monotonic() + 20
    view: dict = {}
    while time.monotonic() < deadline:
        view = httpx.get(f"{collector.url}/api/v1/alerts").json()
        if view["rules"] and view["rules"][0]["last_evaluated_at"]:
            break
        time.sleep(0.1)
    assert [(r["name"], r["state"], r["samples"]) for r in view["rules"]] == [("loops", "ok", 0)]
    text = httpx.get(f"{collector.url}/metrics").text
    assert "loopsight_loop_rate 0" in text.splitlines()
    assert 'loopsight_alert_firing{rule="loops"} 0' in text.splitlines()


def test_collector_refuses_an_invalid_rules_file(tmp_path: Path, start_collector: Callable[..., Any]) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULE.replace("threshold = 0.3", "threshold = 3"))
    collector = start_collector("--rules", str(rules), "--grpc-port", "0", wait=False)
    code = collector.process.wait(timeout=30)
    assert code not in (0, None)
    log = collector.log()
    expected = f"{rules}:5: rule 'loops', key 'threshold': loop_rate is a fraction between 0 and 1, got 3"
    assert "".join(expected.split()) in "".join(log.split()), log  # the console may wrap the line
    assert "Traceback" not in log
