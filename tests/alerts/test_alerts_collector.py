"""`loopsight collector --rules`: the evaluator runs inside the real collector process."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

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
    assert text.splitlines().count("# TYPE loopsight_runs gauge") == 1, "the evaluator's gauges only, not a second set"


def test_collector_without_rules_exposes_agent_gauges_computed_at_most_every_interval(
    start_collector: Callable[..., Any],
) -> None:
    """design.md: /metrics carries agent gauges; without --rules too, cached for --alert-interval."""
    from alerts_traffic import Call, Traffic
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from loopsight.alerts.evaluator import utcnow

    collector = start_collector("--grpc-port", "0", "--alert-interval", "3600")
    traffic = Traffic(store=None)  # type: ignore[arg-type]  # spans go out through the OTLP exporter below
    exporter = OTLPSpanExporter(endpoint=f"{collector.url}/v1/traces")

    def send() -> None:
        assert exporter.export(traffic.exporter.get_finished_spans()).name == "SUCCESS"
        traffic.exporter.clear()

    now = utcnow()
    traffic.run(now - timedelta(seconds=30), [Call("fetch", "same")] * 3, termination="loop_detected")
    traffic.run(
        now - timedelta(seconds=20),
        [Call("search", "a"), Call("fetch", "b", error_type="timeout", error_class="transient")],
    )
    send()
    first = collector.metrics()
    assert (first["loopsight_runs"], first["loopsight_loop_rate"]) == (2, 0.5)
    assert (first['loopsight_tool_calls{tool="fetch"}'], first['loopsight_tool_fail_rate{tool="fetch"}']) == (4, 0.25)
    assert first['loopsight_termination_rate{reason="loop_detected"}'] == 0.5
    assert "loopsight_stall_rate" in first and "loopsight_stuck_runs" in first
    assert not [name for name in first if name.startswith("loopsight_alert_")], "rule series need --rules"

    traffic.run(now - timedelta(seconds=10), [Call("search", "c")])
    send()
    assert len(httpx.get(f"{collector.url}/api/v1/runs").json()["runs"]) == 3
    assert collector.metrics()["loopsight_runs"] == 2, "no second computation within --alert-interval"
    exporter.shutdown()


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


def _poll(url: str, until: Callable[[Any], bool], timeout: float = 60) -> Any:
    """GET ``url`` until ``until(answer)`` (JSON, or text for /metrics)."""
    deadline = time.monotonic() + timeout
    answer: Any = None
    while time.monotonic() < deadline:
        response = httpx.get(url)
        answer = response.text if url.endswith("/metrics") else response.json()
        if until(answer):
            return answer
        time.sleep(0.1)
    raise AssertionError(f"{url} never got there: {answer}")


# collector/server.py (not this task's file) still refuses --rules with a ClickHouse store at start-up;
# the evaluator, state tables and API below work without that check (verified with it bypassed).
# strict: once the check is gone this passes and the marker must go.
def test_collector_on_clickhouse_evaluates_rules_and_keeps_state_across_restart(
    tmp_path: Path, start_collector: Callable[..., Any], hook: Any
) -> None:
    """``--store chdb://… --rules``: state in ClickHouse's alert tables, one notification across a restart."""
    pytest.importorskip("chdb")
    from alerts_traffic import Call, Traffic
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from loopsight.alerts.evaluator import utcnow

    rules = tmp_path / "rules.toml"
    rules.write_text(
        '[[rules]]\nname = "loops"\nmetric = "loop_rate"\nwindow = "10m"\nthreshold = 0.3\n'
        f'min_samples = 3\nnotify = ["webhook:{hook.url}"]\n'
    )
    store = f"chdb://{tmp_path / 'ch'}"
    flags = ("--store", store, "--rules", str(rules), "--alert-interval", "0.2", "--grpc-port", "0")
    collector = start_collector(*flags)
    traffic = Traffic(store=None)  # type: ignore[arg-type]  # spans go out through the OTLP exporter below
    for i in range(4):
        traffic.run(utcnow() - timedelta(seconds=30 - i), [Call("fetch", "same")] * 3)
    exporter = OTLPSpanExporter(endpoint=f"{collector.url}/v1/traces")
    assert exporter.export(traffic.exporter.get_finished_spans()).name == "SUCCESS"
    exporter.shutdown()

    firing = _poll(
        f"{collector.url}/api/v1/alerts",
        lambda v: (
            v["rules"]
            and v["rules"][0]["state"] == "firing"
            and v["events"]
            and v["events"][0]["notify_status"] == "sent"
        ),
    )
    assert (firing["rules"][0]["value"], firing["rules"][0]["samples"]) == (1.0, 4)
    assert [(e["from_state"], e["to_state"], e["notify_status"]) for e in firing["events"]] == [
        ("ok", "firing", "sent")
    ]
    assert [(b["rule"], b["status"]) for b in hook.wait_for(1)] == [("loops", "firing")]
    _poll(f"{collector.url}/metrics", lambda text: 'loopsight_alert_firing{rule="loops"} 1' in text.splitlines())
    assert collector.stop() == 0

    again = start_collector(*flags)
    evaluated = firing["rules"][0]["last_evaluated_at"]
    _poll(f"{again.url}/api/v1/alerts", lambda v: v["rules"][0]["last_evaluated_at"] > evaluated)
    time.sleep(1.0)  # a few more rounds: still firing, and nothing sent again
    view = httpx.get(f"{again.url}/api/v1/alerts").json()
    assert view["rules"][0]["state"] == "firing"
    assert [(e["to_state"], e["notify_status"]) for e in view["events"]] == [("firing", "sent")]
    assert len(hook.received) == 1 and hook.attempts == 1


def test_the_alerts_links_point_at_the_dashboard_url_given(
    tmp_path: Path, start_collector: Callable[..., Any], hook: Any
) -> None:
    """Deep links used the default 127.0.0.1:8501 whatever the dashboard's address (`up --dashboard-port`)."""
    from alerts_traffic import Call, Traffic
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from loopsight.alerts.evaluator import utcnow

    rules = tmp_path / "rules.toml"
    rules.write_text(RULE.replace('notify = ["log"]', f'min_samples = 1\nnotify = ["webhook:{hook.url}"]'))
    collector = start_collector(
        "--rules",
        str(rules),
        "--alert-interval",
        "0.2",
        "--grpc-port",
        "0",
        "--dashboard-url",
        "http://dash.example:9/",
    )
    traffic = Traffic(store=None)  # type: ignore[arg-type]
    traffic.run(utcnow() - timedelta(seconds=30), [Call("fetch", "same")] * 3, termination="loop_detected")
    exporter = OTLPSpanExporter(endpoint=f"{collector.url}/v1/traces")
    assert exporter.export(traffic.exporter.get_finished_spans()).name == "SUCCESS"
    exporter.shutdown()
    [body] = hook.wait_for(1, timeout=30)
    assert body["status"] == "firing" and body["examples"]
    assert all(e["url"].startswith("http://dash.example:9/?run=") for e in body["examples"]), body["examples"]
