"""Notifications against a real webhook receiver: retries on 500 and timeouts, bounded queue,
failures counted, and a slow webhook never stalls evaluation or ingest."""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

from alerts_traffic import T0, Call, Hook, Traffic

from loopsight.alerts import (
    Evaluator,
    Notification,
    Notifier,
    Target,
    alerts_overview,
    parse_rules,
    slack_payload,
    webhook_payload,
)
from loopsight.stores.duckdb_store import Store


def rule_for(url: str, kind: str = "webhook"):
    return parse_rules(
        f'[[rules]]\nname = "r"\nmetric = "loop_rate"\nwindow = "5m"\nthreshold = 0.3\n'
        f'description = "runs repeat the same call"\nnotify = ["{kind}:{url}"]\n'
    )[0]


def note(rule, **kwargs) -> Notification:
    return Notification(
        rule,
        kwargs.pop("status", "firing"),
        datetime(2026, 3, 2, 12),
        0.5,
        None,
        10,
        ["0af7651916cd43dd8448eb211c80319c"],
        **kwargs,
    )


def test_500_is_retried_with_backoff_then_delivered(hook: Hook) -> None:
    hook.script = [(500, 0.0), (503, 0.0)]
    results = []
    notifier = Notifier(timeout=2.0, retries=3, backoff=0.05, on_result=lambda n, s, e: results.append((s, e)))
    notifier.start()
    try:
        started = time.monotonic()
        assert notifier.submit(note(rule_for(hook.url)))
        assert notifier.flush(10)
        assert time.monotonic() - started >= 0.05 + 0.1  # two backoffs: 0.05 s then 0.1 s
    finally:
        notifier.stop()
    assert hook.attempts == 3 and len(hook.received) == 1
    assert results == [("sent", None)]
    assert (notifier.stats.retries["webhook"], notifier.stats.sent["webhook"], notifier.stats.failed["webhook"]) == (
        2,
        1,
        0,
    )


def test_4xx_is_final_and_counted(hook: Hook) -> None:
    hook.script = [(404, 0.0)]
    results = []
    notifier = Notifier(timeout=2.0, retries=3, backoff=0.01, on_result=lambda n, s, e: results.append((s, e)))
    notifier.start()
    try:
        notifier.submit(note(rule_for(hook.url)))
        assert notifier.flush(10)
    finally:
        notifier.stop()
    assert hook.attempts == 1
    assert results == [
        ("failed", f"webhook:http://127.0.0.1:{int(hook.url.split(':')[2].split('/')[0])}/…: HTTP 404 (not retried)")
    ]
    assert notifier.stats.failed["webhook"] == 1


def test_queue_is_bounded_and_drops_are_counted(hook: Hook) -> None:
    notifier = Notifier(max_queue=2)  # not started: nothing drains the queue
    rule = rule_for(hook.url)
    assert [notifier.submit(note(rule)) for _ in range(4)] == [True, True, False, False]
    assert notifier.stats.dropped == 2
    notifier.stop()


def test_payloads_link_to_the_dashboard_run_view() -> None:
    rule = rule_for("https://hooks.example.com/T0/B0/secret", "slack")
    n = note(rule, dashboard_url="http://127.0.0.1:8501/", event_id=7)
    slack = slack_payload(n)
    # Slack reads & < > as markup: sent escaped, shown as typed
    assert slack["text"] == ":rotating_light: [FIRING] r: loop_rate = 0.5 (&gt;= 0.3 over 5m, 10 samples)"
    assert slack["blocks"][1]["elements"][0]["text"] == "runs repeat the same call"
    assert slack["blocks"][2]["text"]["text"] == (
        "Example runs: <http://127.0.0.1:8501/?run=0af7651916cd43dd8448eb211c80319c|0af7651916cd>"
    )
    body = webhook_payload(n)
    assert body["examples"] == [
        {
            "trace_id": "0af7651916cd43dd8448eb211c80319c",
            "url": "http://127.0.0.1:8501/?run=0af7651916cd43dd8448eb211c80319c",
        }
    ]
    assert (body["event_id"], body["status"], body["at"]) == (7, "firing", "2026-03-02T12:00:00Z")
    assert "secret" not in str(rule.describe())


def test_timing_out_webhook_does_not_stall_evaluation_or_ingest(
    tmp_path: Path, store: Store, traffic: Traffic, hook: Hook
) -> None:
    hook.script = [(200, 2.5)] * 2  # answers after the client's 1 s timeout, every time
    rules = tmp_path / "rules.toml"
    rules.write_text(
        f'[[rules]]\nname = "loops"\nmetric = "loop_rate"\nwindow = "5m"\nthreshold = 0.3\n'
        f'min_samples = 2\nnotify = ["webhook:{hook.url}"]\n'
    )
    evaluator = Evaluator(store.reader, str(rules), 30, notifier=Notifier(timeout=1.0, retries=1, backoff=0.05))
    evaluator.notifier.start()
    try:
        for i in range(3):
            traffic.run(T0 - timedelta(minutes=2) + timedelta(seconds=i), [Call("fetch", "same")] * 3)
        traffic.flush()
        (result,) = evaluator.evaluate_once(T0)
        assert result.state.state == "firing"
        # the delivery now waits ~2 s in timeouts; ingest and evaluation carry on meanwhile
        started = time.monotonic()
        traffic.run(T0 + timedelta(minutes=1), [Call()])
        assert traffic.flush() > 0
        ingest_seconds = time.monotonic() - started
        started = time.monotonic()
        evaluator.evaluate_once(T0 + timedelta(minutes=1))
        evaluate_seconds = time.monotonic() - started
        still_delivering = not evaluator.notifier.flush(0)
        assert evaluator.notifier.flush(10)
        assert hook.attempts == 2 and hook.received == []
    finally:
        evaluator.stop()
    assert ingest_seconds < 1.0 and evaluate_seconds < 1.0, (ingest_seconds, evaluate_seconds)
    assert still_delivering
    lines = evaluator.prometheus_lines()
    assert 'loopsight_alert_notifications_failed_total{target="webhook"} 1' in lines
    assert 'loopsight_alert_notification_retries_total{target="webhook"} 1' in lines
    con = store.reader()
    try:
        (event,) = [e for e in alerts_overview(con)["events"] if e["to_state"] == "firing"]
        rule_row = alerts_overview(con)["rules"][0]
    finally:
        con.close()
    assert event["notify_status"] == "failed" and "timed out after 1s after 2 attempts" in event["notify_error"]
    assert rule_row["notify_failures"] == 1


def test_a_slow_webhook_holds_up_its_own_rule_only(hook: Hook) -> None:
    import zlib

    slow, fast = "slow-hook", "fast-hook"
    assert zlib.crc32(slow.encode()) % 4 != zlib.crc32(fast.encode()) % 4  # on different delivery threads
    hook.script = [(200, 3.0)]  # the first request waits 3 s, the next answers at once
    done: dict[str, float] = {}
    notifier = Notifier(
        timeout=10.0, retries=0, on_result=lambda n, s, e: done.setdefault(n.rule.name, time.monotonic())
    )
    notifier.start()
    try:
        started = time.monotonic()
        notifier.submit(note(parse_rules(rule_text(slow, hook.url))[0]))
        time.sleep(0.3)  # the slow rule's request is first at the hook
        notifier.submit(note(parse_rules(rule_text(fast, hook.url))[0]))
        assert notifier.flush(15)
    finally:
        notifier.stop()
    assert done[fast] - started < 2.0 < done[slow] - started, done


def rule_text(name: str, url: str) -> str:
    return f'[[rules]]\nname = "{name}"\nmetric = "loop_rate"\nwindow = "5m"\nthreshold = 0.3\nnotify = ["log", "webhook:{url}"]\n'


def _trickling_hook() -> tuple[str, socket.socket]:
    """A hook that answers its status line, then one header line every 0.3 s for 30 s: each read
    is within any timeout, the answer never ends."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def answer(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            for i in range(100):
                time.sleep(0.3)
                conn.sendall(f"X-Slow-{i}: yes\r\n".encode())

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{server.getsockname()[1]}/hook", server


def test_a_hook_trickling_its_answer_is_cut_and_the_next_target_still_gets_its_turn(hook: Hook) -> None:
    """A trickling hook held its thread for minutes; a target whose URL httpx refuses ended the
    delivery before the rule's other targets and was not counted."""
    trickle_url, server = _trickling_hook()
    rule = dataclasses.replace(
        rule_for(hook.url),
        notify=(
            Target("webhook", trickle_url),
            Target("webhook", "http://127.0.0.1:abc/x"),
            Target("webhook", hook.url),
        ),
    )
    results = []
    notifier = Notifier(timeout=1.0, attempt_seconds=1.5, retries=0, on_result=lambda n, s, e: results.append((s, e)))
    notifier.start()
    try:
        started = time.monotonic()
        notifier.submit(note(rule))
        assert notifier.flush(20)
        assert time.monotonic() - started < 10
    finally:
        notifier.stop()
        server.close()
    assert len(hook.received) == 1  # the last target was tried after both failures
    ((status, error),) = results
    assert status == "failed"
    assert "/…: no answer within 1.5s after 1 attempts" in error and "invalid URL" in error, error
    assert (notifier.stats.failed["webhook"], notifier.stats.sent["webhook"]) == (2, 1)
