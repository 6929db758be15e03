"""`loopsight alerts check` exit codes (file and query API), and alerts inside a live collector:
real OTLP exporter -> collector on a loopback port -> evaluator -> webhook; /api/v1/alerts."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
import uvicorn
from alerts_traffic import Call, Hook, Traffic
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from ports import free_port
from rich.console import Console

from loopsight.alerts import Evaluator, Notifier, check
from loopsight.alerts.evaluator import utcnow
from loopsight.collector.app import Settings, create_app
from loopsight.stores.duckdb_store import Store

RULES = """
[[rules]]
name = "loop-rate"
metric = "loop_rate"
window = "10m"
threshold = 0.3
min_samples = 3
notify = ["webhook:{url}"]

[[rules]]
name = "fetch-failing"
metric = "tool_fail_rate"
tool = "fetch"
window = "10m"
threshold = 0.5
min_samples = 3
"""


def rules_file(tmp_path: Path, url: str = "http://127.0.0.1:9/hook") -> str:
    path = tmp_path / "rules.toml"
    path.write_text(RULES.format(url=url))
    return str(path)


def run_check(*args: object, **kwargs: object) -> tuple[int, str]:
    out = io.StringIO()
    code = check(*args, console=Console(file=out, width=250, color_system=None), **kwargs)  # type: ignore[arg-type]
    return code, out.getvalue()


def build_runs(traffic: Traffic, loops: int, clean: int) -> None:
    """``loops`` runs repeating fetch 3x, then ``clean`` single-search runs, a few minutes before now."""
    now = utcnow()
    for i in range(loops):
        traffic.run(now - timedelta(minutes=3, seconds=-i), [Call("fetch", "same")] * 3)
    for i in range(clean):
        traffic.run(now - timedelta(minutes=2, seconds=-i), [Call("search", f"q{i}")])


def looping_traffic(traffic: Traffic, loops: int, clean: int) -> None:
    build_runs(traffic, loops, clean)
    traffic.flush()


def test_check_on_a_db_file(tmp_path: Path) -> None:
    db = str(tmp_path / "check.duckdb")
    store = Store.open(db)
    looping_traffic(Traffic(store), loops=0, clean=4)
    store.close()
    code, text = run_check(rules_file(tmp_path), db=db)
    assert code == 0 and "no rule fires (2 checked)" in text, text

    store = Store.open(db)
    looping_traffic(Traffic(store), loops=3, clean=0)
    store.close()
    code, text = run_check(rules_file(tmp_path), db=db)
    assert code == 1, text
    assert "1 rule(s) firing: loop-rate" in text and "FIRING" in text and "0.4286" in text


def test_check_errors_exit_2(tmp_path: Path, store: Store) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[rules]]\nname = "x"\nmetric = "loop_rate"\nwindow = "5m"\nthreshold = "high"\n')
    code, text = run_check(str(bad), db=store.path)
    assert code == 2 and f"{bad}:5: rule 'x', key 'threshold': must be a finite number, got 'high'" in text.replace(
        "\n", ""
    )
    bad.write_text('[[rule]]\nname = "[red]x[/red]"\n')  # printed as written, not read as markup
    code, text = run_check(str(bad), db=store.path)
    assert code == 2 and "rules go in [[rules]] tables" in text.replace("\n", ""), text
    code, text = run_check(rules_file(tmp_path), db=str(tmp_path / "missing.duckdb"))
    assert code == 2 and "does not exist" in text
    port = free_port()
    code, text = run_check(rules_file(tmp_path), collector=f"http://127.0.0.1:{port}")
    assert code == 2 and f"cannot reach the collector at http://127.0.0.1:{port}" in text
    assert "Traceback" not in text


@pytest.fixture
def live(store: Store) -> Iterator[str]:
    """The collector's HTTP app (OTLP + query API, token "s3cret") on a free loopback port."""
    config = uvicorn.Config(
        create_app(store, Settings(token="s3cret")), host="127.0.0.1", port=0, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_alerts_inside_a_live_collector(tmp_path: Path, store: Store, live: str, hook: Hook) -> None:
    hook.script = [(500, 0.0), (200, 2.5)]  # a 500, then a hang past the client's timeout, then OK
    rules = rules_file(tmp_path, hook.url)
    evaluator = Evaluator(store.reader, rules, 0.5, notifier=Notifier(timeout=1.0, retries=3, backoff=0.05))
    exporter = OTLPSpanExporter(endpoint=f"{live}/v1/traces", headers={"Authorization": "Bearer s3cret"}, timeout=5)
    traffic = Traffic(store)
    auth = {"Authorization": "Bearer s3cret"}
    evaluator.start()
    try:
        assert run_check(rules, collector=live, token="s3cret")[0] == 0
        assert run_check(rules, collector=live, token="wrong")[0] == 2

        looping_traffic_via(traffic, exporter, loops=3, clean=1)
        deadline = time.monotonic() + 15
        while hook.attempts < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        # the webhook is hanging now: spans still go in at full speed
        started = time.monotonic()
        looping_traffic_via(traffic, exporter, loops=0, clean=2)
        assert time.monotonic() - started < 1.0
        body = hook.wait_for(1, timeout=15)[0]
        assert (body["rule"], body["status"], body["samples"]) == ("loop-rate", "firing", 4)
        assert hook.attempts == 3

        code, text = run_check(rules, collector=live, token="s3cret")
        assert code == 1 and "1 rule(s) firing: loop-rate" in text, text

        view = httpx.get(f"{live}/api/v1/alerts", headers=auth).json()
        rules_by_name = {r["name"]: r for r in view["rules"]}
        assert rules_by_name["loop-rate"]["state"] == "firing"
        assert rules_by_name["loop-rate"]["notify"] == [f"webhook:{hook.url.rsplit('/', 1)[0]}/…"]
        assert rules_by_name["fetch-failing"]["state"] == "ok"
        assert view["events"][0]["to_state"] == "firing"
        series = httpx.get(f"{live}/api/v1/alerts/series", params={"rule": "loop-rate"}, headers=auth).json()
        assert len(series["series"]) >= 2 and series["series"][-1]["samples"] >= 4
        assert httpx.get(f"{live}/api/v1/alerts").status_code == 401
        for params in (
            {"metric": "nope", "since": "-5m", "until": "-1m"},
            {"metric": "loop_rate"},
            {"metric": "loop_rate", "since": "-5m", "until": "-1m", "stat": "p99"},
            # what a rules file refuses: a filter the metric does not take, a metric without its key
            {"metric": "tokens_per_run", "since": "-5m", "until": "-1m", "tool": "fetch"},
            {"metric": "error_class_rate", "since": "-5m", "until": "-1m"},
        ):
            answer = httpx.get(f"{live}/api/v1/alerts/metric", params=params, headers=auth)
            assert answer.status_code == 400 and "error" in answer.json(), (params, answer.text)
        refused = httpx.get(f"{live}/api/v1/alerts/metric", params=params | {"tool": "x"}, headers=auth).json()
        assert "error_class" in refused["error"], refused
        assert any(line.startswith("loopsight_loop_rate ") for line in evaluator.prometheus_lines())
    finally:
        evaluator.stop()
        exporter.shutdown()


def looping_traffic_via(traffic: Traffic, exporter: OTLPSpanExporter, loops: int, clean: int) -> None:
    """Build runs like :func:`looping_traffic` but send them with the real OTLP/HTTP exporter."""
    build_runs(traffic, loops, clean)
    spans = traffic.exporter.get_finished_spans()
    traffic.exporter.clear()
    assert exporter.export(spans).name == "SUCCESS"
