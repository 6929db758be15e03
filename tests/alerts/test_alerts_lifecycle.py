"""The evaluator on a real store with an injected clock: fire, resolve, spike, min_samples, for,
cooldown, restart without duplicate notifications; notifications reach a real webhook."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from alerts_traffic import T0, Call, Hook, Traffic

from loopsight.alerts import Evaluator, Notifier, alerts_overview
from loopsight.stores import open_writer
from loopsight.stores.clickhouse import chdb_open_path
from loopsight.stores.duckdb_store import Store

MIN = timedelta(minutes=1)


def write_rules(tmp_path: Path, text: str) -> str:
    path = tmp_path / "rules.toml"
    path.write_text(text)
    return str(path)


_databases = itertools.count()


@pytest.fixture
def open_store(
    request: pytest.FixtureRequest, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[], Any]]:
    """Opens (and reopens, for restarts) one store: a DuckDB file, or (``BOTH_STORES``) a ClickHouse database on chdb."""
    opened: list[Any] = []
    if getattr(request, "param", "duckdb") == "duckdb":
        url = str(tmp_path / "store.duckdb")
    else:
        pytest.importorskip("chdb")
        directory = chdb_open_path() or str(tmp_path_factory.mktemp("chdb"))
        url = f"chdb://{directory}?database=alerts{next(_databases)}"

    def open_() -> Any:
        opened.append(open_writer(url))
        return opened[-1]

    yield open_
    for store in opened:
        store.close()


# The lifecycle logic is the same on both stores; these tests also run on ClickHouse's state tables.
BOTH_STORES = pytest.mark.parametrize("open_store", ["duckdb", "chdb"], indirect=True)


@pytest.fixture
def store(open_store: Callable[[], Any]) -> Any:
    return open_store()


def make_evaluator(store: Store, rules: str) -> Evaluator:
    evaluator = Evaluator(
        store.reader,
        rules,
        30,
        dashboard_url="http://127.0.0.1:8501/",
        notifier=Notifier(timeout=2.0, retries=2, backoff=0.05),
    )
    evaluator.notifier.start()
    return evaluator


@pytest.fixture
def stop_later() -> Iterator[list[Evaluator]]:
    started: list[Evaluator] = []
    yield started
    for evaluator in started:
        evaluator.stop()


def overview(store: Store) -> dict:
    con = store.reader()
    try:
        return alerts_overview(con)
    finally:
        con.close()


def runs(
    traffic: Traffic, start: datetime, count: int, *, loops: int = 0, fails: int = 0, spacing: float = 10
) -> list[str]:
    """``count`` runs from ``start``; the first ``loops`` repeat fetch 3x, the next ``fails`` have a failing fetch."""
    ids = []
    for i in range(count):
        at = start + timedelta(seconds=i * spacing)
        if i < loops:
            calls = [Call("fetch", "same")] * 3
        elif i < loops + fails:
            calls = [Call("fetch", f"f{i}", error_type="HTTP 503", error_class="transient")]
        else:
            calls = [Call("search", f"q{i}"), Call("fetch", f"u{i}")]
        ids.append(traffic.run(at, calls))
    traffic.flush()
    return ids


@BOTH_STORES
def test_fires_on_loops_and_failures_then_resolves(
    tmp_path: Path, store: Store, traffic: Traffic, hook: Hook, stop_later: list[Evaluator]
) -> None:
    rules = write_rules(
        tmp_path,
        f"""
[[rules]]
name = "loop-rate"
metric = "loop_rate"
window = "5m"
threshold = 0.3
min_samples = 5
notify = ["webhook:{hook.url}"]

[[rules]]
name = "fetch-failing"
metric = "tool_fail_rate"
tool = "fetch"
window = "5m"
threshold = 0.2
min_samples = 5
notify = ["slack:{hook.url}", "log"]
""",
    )
    evaluator = make_evaluator(store, rules)
    stop_later.append(evaluator)
    assert [r.state.state for r in evaluator.evaluate_once(T0 - 10 * MIN)] == ["ok", "ok"]

    bad = runs(traffic, T0 - 4 * MIN, 10, loops=4, fails=5)  # fetch: 12 looping + 5 failing + 1 clean calls
    results = evaluator.evaluate_once(T0)
    assert {r.rule.name: (r.state.state, r.verdict.current.value) for r in results} == {
        "loop-rate": ("firing", 0.4),
        "fetch-failing": ("firing", pytest.approx(5 / 18)),
    }
    assert evaluator.notifier.flush(10)
    sent = hook.wait_for(2)
    generic = next(b for b in sent if "rule" in b)
    slack = next(b for b in sent if "blocks" in b)
    assert (generic["status"], generic["rule"], generic["value"], generic["samples"]) == (
        "firing",
        "loop-rate",
        0.4,
        10,
    )
    assert {e["trace_id"] for e in generic["examples"]} == set(bad[:4])
    assert generic["examples"][0]["url"] == f"http://127.0.0.1:8501/?run={generic['examples'][0]['trace_id']}"
    assert slack["text"].startswith(":rotating_light: [FIRING] fetch-failing: tool_fail_rate (tool=fetch)")
    assert "http://127.0.0.1:8501/?run=" in slack["blocks"][-1]["text"]["text"]

    # still bad a minute later: no second notification
    evaluator.evaluate_once(T0 + MIN)
    assert evaluator.notifier.flush(10) and len(hook.received) == 2

    runs(traffic, T0 + 6 * MIN, 10)  # the loops and failures stop
    results = evaluator.evaluate_once(T0 + 10 * MIN)
    assert [r.state.state for r in results] == ["resolved", "resolved"]
    assert evaluator.notifier.flush(10)
    resolved = hook.wait_for(4)[2:]
    assert {b.get("status") or b["text"].split("]")[0] for b in resolved} == {
        "resolved",
        ":white_check_mark: [RESOLVED",
    }

    view = overview(store)
    assert [(r["name"], r["state"]) for r in view["rules"]] == [
        ("fetch-failing", "resolved"),
        ("loop-rate", "resolved"),
    ]
    loop_events = [
        (e["from_state"], e["to_state"], e["notify_status"]) for e in view["events"] if e["rule"] == "loop-rate"
    ]
    assert loop_events == [("firing", "resolved", "sent"), ("ok", "firing", "sent")]
    firing = next(e for e in view["events"] if e["rule"] == "loop-rate" and e["to_state"] == "firing")
    assert (firing["value"], firing["threshold"], firing["samples"]) == (0.4, 0.3, 10)
    assert set(firing["examples"]) == set(bad[:4])
    lines = evaluator.prometheus_lines()
    assert 'loopsight_alert_firing{rule="loop-rate"} 0' in lines
    assert 'loopsight_alert_notifications_sent_total{target="webhook"} 2' in lines


def test_spike_against_baseline(tmp_path: Path, store: Store, traffic: Traffic, stop_later: list[Evaluator]) -> None:
    rules = write_rules(
        tmp_path,
        """
[[rules]]
name = "fetch-spike"
metric = "tool_fail_rate"
tool = "fetch"
window = "5m"
baseline = "1h"
factor = 3
threshold = 0.1
min_samples = 5
notify = ["log"]
""",
    )
    evaluator = make_evaluator(store, rules)
    stop_later.append(evaluator)
    # baseline hour [T0-65m, T0-5m): 20% of fetch calls fail
    runs(traffic, T0 - 65 * MIN, 60, fails=12, spacing=55)
    # current window: 40% fail, above the threshold but only 2x the baseline
    runs(traffic, T0 - 5 * MIN, 10, fails=4, spacing=25)
    (result,) = evaluator.evaluate_once(T0)
    assert result.state.state == "ok" and "below 3 x baseline 0.2" in result.verdict.reason
    assert result.verdict.baseline.samples == 60 and result.verdict.baseline.value == pytest.approx(0.2)
    # the next window: 70% fail -> 3.5x the baseline
    runs(traffic, T0 + MIN, 10, fails=7, spacing=20)
    (result,) = evaluator.evaluate_once(T0 + 5 * MIN)
    assert result.state.state == "firing", result.verdict
    assert result.verdict.current.value == pytest.approx(0.7)


def test_min_samples_and_for_suppress(
    tmp_path: Path, store: Store, traffic: Traffic, hook: Hook, stop_later: list[Evaluator]
) -> None:
    rules = write_rules(
        tmp_path,
        f"""
[[rules]]
name = "loops-held"
metric = "loop_rate"
window = "10m"
threshold = 0.3
min_samples = 5
for = "2m"
notify = ["webhook:{hook.url}"]
""",
    )
    evaluator = make_evaluator(store, rules)
    stop_later.append(evaluator)
    runs(traffic, T0 - 9 * MIN, 2, loops=1)  # one looping run of two
    (result,) = evaluator.evaluate_once(T0 - 8 * MIN)
    assert result.state.state == "ok" and result.verdict.reason == "insufficient samples (2 < 5)"

    runs(traffic, T0 - 5 * MIN, 8, loops=3)  # now 4 of 10
    (result,) = evaluator.evaluate_once(T0)
    assert result.state.state == "pending"
    (result,) = evaluator.evaluate_once(T0 + MIN)
    assert result.state.state == "pending"
    assert evaluator.notifier.flush(5) and hook.received == []
    (result,) = evaluator.evaluate_once(T0 + 2 * MIN)
    assert result.state.state == "firing"
    assert hook.wait_for(1)[0]["status"] == "firing"

    (result,) = evaluator.evaluate_once(T0 + 15 * MIN)  # the window has no runs left
    assert result.state.state == "resolved"

    # a pending condition that clears before `for` goes back to ok without a word
    runs(traffic, T0 + 20 * MIN, 5, loops=5, spacing=5)
    (result,) = evaluator.evaluate_once(T0 + 21 * MIN)
    assert result.state.state == "pending"
    (result,) = evaluator.evaluate_once(T0 + 35 * MIN)
    assert result.state.state == "ok"
    assert evaluator.notifier.flush(5)
    assert [b["status"] for b in hook.wait_for(2)] == ["firing", "resolved"]
    events = [(e["from_state"], e["to_state"], e["notify_status"]) for e in reversed(overview(store)["events"])]
    assert events == [
        ("ok", "pending", "none"),
        ("pending", "firing", "sent"),
        ("firing", "resolved", "sent"),
        ("resolved", "pending", "none"),
        ("pending", "ok", "none"),
    ]


def test_cooldown(tmp_path: Path, store: Store, traffic: Traffic, hook: Hook, stop_later: list[Evaluator]) -> None:
    rules = write_rules(
        tmp_path,
        f"""
[[rules]]
name = "loops"
metric = "loop_rate"
window = "1m"
threshold = 0.5
min_samples = 2
cooldown = "30m"
notify = ["webhook:{hook.url}"]
""",
    )
    evaluator = make_evaluator(store, rules)
    stop_later.append(evaluator)
    timeline = []
    for minute, looping in ((0, True), (2, False), (4, True), (6, False), (40, True), (42, False)):
        if looping:
            runs(traffic, T0 + (minute - 1) * MIN, 3, loops=3, spacing=5)
        (result,) = evaluator.evaluate_once(T0 + minute * MIN)
        timeline.append(result.state.state)
    assert timeline == ["firing", "resolved", "firing", "resolved", "firing", "resolved"]
    assert evaluator.notifier.flush(10)
    statuses = [b["status"] for b in hook.wait_for(4)]
    assert statuses == ["firing", "resolved", "firing", "resolved"]  # the re-fire at 4m stayed quiet
    events = [(e["to_state"], e["notify_status"]) for e in reversed(overview(store)["events"])]
    assert events == [
        ("firing", "sent"),
        ("resolved", "sent"),
        ("firing", "suppressed"),
        ("resolved", "none"),
        ("firing", "sent"),
        ("resolved", "sent"),
    ]


@BOTH_STORES
def test_restart_keeps_state_and_sends_no_duplicate(
    tmp_path: Path, open_store: Callable[[], Any], traffic: Traffic, hook: Hook
) -> None:
    rules = write_rules(
        tmp_path,
        f"""
[[rules]]
name = "loops"
metric = "loop_rate"
window = "10m"
threshold = 0.3
min_samples = 5
notify = ["webhook:{hook.url}"]

[[rules]]
name = "loops-held"
metric = "loop_rate"
window = "10m"
threshold = 0.3
min_samples = 5
for = "5m"
notify = ["webhook:{hook.url}"]
""",
    )
    traffic.store.close()  # the store is closed and opened again below, as across a collector restart
    first = open_store()
    traffic.store = first
    runs(traffic, T0 - 5 * MIN, 10, loops=5)
    evaluator = make_evaluator(first, rules)
    assert [r.state.state for r in evaluator.evaluate_once(T0)] == ["firing", "pending"]
    assert evaluator.notifier.flush(10) and len(hook.wait_for(1)) == 1
    evaluator.stop()
    first.close()

    second = open_store()
    try:
        evaluator = make_evaluator(second, rules)
        # still looping after the restart: firing stays firing, nothing re-sent; the pending timer
        # kept its start, so the held rule fires 5 minutes after T0, not 5 minutes after the restart
        assert [r.state.state for r in evaluator.evaluate_once(T0 + MIN)] == ["firing", "pending"]
        assert [r.state.state for r in evaluator.evaluate_once(T0 + 5 * MIN)] == ["firing", "firing"]
        assert evaluator.notifier.flush(10)
        assert [(b["rule"], b["status"]) for b in hook.wait_for(2)] == [("loops", "firing"), ("loops-held", "firing")]
        # and the resolution of the alert notified before the restart is still announced
        assert [r.state.state for r in evaluator.evaluate_once(T0 + 30 * MIN)] == ["resolved", "resolved"]
        assert evaluator.notifier.flush(10)
        assert [b["status"] for b in hook.wait_for(4)[2:]] == ["resolved", "resolved"]
        evaluator.stop()
    finally:
        second.close()


@BOTH_STORES
def test_a_rule_removed_while_firing_resolves_and_says_so(
    tmp_path: Path, store: Any, traffic: Traffic, hook: Hook, stop_later: list[Evaluator]
) -> None:
    """Taking a firing rule out of the file left its alert firing for good, with no resolved
    notification; a pending one stays pending."""
    rule = 'metric = "loop_rate"\nwindow = "10m"\nthreshold = 0.3\nmin_samples = 5\n'
    rules = write_rules(
        tmp_path,
        f'[[rules]]\nname = "fires"\n{rule}notify = ["webhook:{hook.url}"]\n'
        f'[[rules]]\nname = "waits"\n{rule}for = "1h"\nnotify = ["webhook:{hook.url}"]\n'
        f'[[rules]]\nname = "stays"\n{rule}',
    )
    runs(traffic, T0 - 5 * MIN, 10, loops=5)
    evaluator = make_evaluator(store, rules)
    stop_later.append(evaluator)
    assert [r.state.state for r in evaluator.evaluate_once(T0)] == ["firing", "pending", "firing"]
    assert evaluator.notifier.flush(10) and [b["status"] for b in hook.wait_for(1)] == ["firing"]
    Path(rules).write_text(f'[[rules]]\nname = "stays"\n{rule}')
    import os

    os.utime(rules, ns=(1, 1))
    assert [r.state.state for r in evaluator.evaluate_once(T0 + MIN)] == ["firing"]
    assert evaluator.notifier.flush(10)
    assert [(b["rule"], b["status"]) for b in hook.wait_for(2)] == [("fires", "firing"), ("fires", "resolved")]
    events = [(e["rule"], e["from_state"], e["to_state"], e["notify_status"]) for e in overview(store)["events"]]
    assert ("fires", "firing", "resolved", "sent") in events and ("waits", "pending", "ok", "none") in events
    assert [r["name"] for r in overview(store)["rules"]] == ["stays"]
    evaluator.evaluate_once(T0 + 2 * MIN)  # announced once
    assert evaluator.notifier.flush(10) and len(hook.received) == 2


@BOTH_STORES
def test_rules_removed_from_the_file_become_inactive_and_reload(
    tmp_path: Path, store: Store, stop_later: list[Evaluator]
) -> None:
    rules = write_rules(
        tmp_path,
        '[[rules]]\nname = "a"\nmetric = "loop_rate"\nwindow = "5m"\nthreshold = 0.5\n'
        '[[rules]]\nname = "b"\nmetric = "loop_rate"\nwindow = "5m"\nthreshold = 0.5\n',
    )
    evaluator = make_evaluator(store, rules)
    stop_later.append(evaluator)
    evaluator.evaluate_once(T0)
    assert [r["name"] for r in overview(store)["rules"]] == ["a", "b"]
    Path(rules).write_text('[[rules]]\nname = "b"\nmetric = "loop_rate"\nwindow = "10m"\nthreshold = 0.5\n')
    import os

    os.utime(rules, ns=(1, 1))  # a different mtime even on coarse file systems
    evaluator.evaluate_once(T0 + MIN)
    assert [(r["name"], r["window"]) for r in overview(store)["rules"]] == [("b", "10m")]
    Path(rules).write_text("[[rules]]\nname = 'b'\nmetric = 'nope'\n")  # broken edits keep the old rules
    os.utime(rules, ns=(2, 2))
    evaluator.evaluate_once(T0 + 2 * MIN)
    assert [r.name for r in evaluator.rules] == ["b"]
    con = store.reader()
    try:
        assert con.execute("SELECT count(*) FROM alert_samples WHERE rule = 'b'").fetchall() == [(3,)]
    except duckdb.Error:
        raise
    finally:
        con.close()


def test_a_firing_kept_quiet_by_the_cooldown_is_announced_when_it_is_over(
    tmp_path: Path, store: Store, traffic: Traffic, hook: Hook, stop_later: list[Evaluator]
) -> None:
    """On-call's last message said RESOLVED while the alert fired again for good inside the cooldown."""
    rules = write_rules(
        tmp_path,
        '[[rules]]\nname = "loops"\nmetric = "loop_rate"\nwindow = "5m"\nthreshold = 0.5\nmin_samples = 2\n'
        f'cooldown = "10m"\nnotify = ["webhook:{hook.url}"]\n',
    )
    evaluator = make_evaluator(store, rules)
    stop_later.append(evaluator)
    timeline = []
    for minute, looping in ((0, True), (6, False), (7, True), (9, True), (11, True), (17, False)):
        if looping:
            runs(traffic, T0 + (minute - 1) * MIN, 3, loops=3, spacing=5)
        (result,) = evaluator.evaluate_once(T0 + minute * MIN)
        timeline.append(result.state.state)
    assert timeline == ["firing", "resolved", "firing", "firing", "firing", "resolved"]
    assert evaluator.notifier.flush(10)
    bodies = hook.wait_for(4)
    assert [(b["status"], b["note"]) for b in bodies] == [
        ("firing", None),
        ("resolved", None),
        ("firing", "cooldown over"),  # at 11m, 11 minutes after the last firing notification
        ("resolved", None),
    ]
    events = [(e["to_state"], e["notify_status"], e["notify_error"]) for e in reversed(overview(store)["events"])]
    assert events[2:4] == [("firing", "suppressed", "cooldown"), ("firing", "sent", "cooldown over")]


def test_a_rules_file_being_written_is_read_once_it_settles(
    tmp_path: Path, store: Store, traffic: Traffic, hook: Hook, stop_later: list[Evaluator]
) -> None:
    """An editor's save truncates the file first: read then, every firing alert resolved and fired again."""
    import os

    text = (
        '[[rules]]\nname = "loops"\nmetric = "loop_rate"\nwindow = "10m"\nthreshold = 0.3\nmin_samples = 5\n'
        f'notify = ["webhook:{hook.url}"]\n'
    )
    rules = write_rules(tmp_path, text)
    runs(traffic, T0 - 5 * MIN, 10, loops=5)
    evaluator = make_evaluator(store, rules)
    stop_later.append(evaluator)
    assert [r.state.state for r in evaluator.evaluate_once(T0)] == ["firing"]
    Path(rules).write_text("")  # caught mid-save: modified just now
    assert [r.state.state for r in evaluator.evaluate_once(T0 + MIN)] == ["firing"]
    Path(rules).write_text(text)
    os.utime(rules, ns=(10**9, 10**9))  # the save is done
    assert [r.state.state for r in evaluator.evaluate_once(T0 + 2 * MIN)] == ["firing"]
    assert evaluator.notifier.flush(10) and [b["status"] for b in hook.received] == ["firing"]
    Path(rules).write_text("")  # emptied on purpose, and left so: every alert ends
    os.utime(rules, ns=(2 * 10**9, 2 * 10**9))
    assert evaluator.evaluate_once(T0 + 3 * MIN) == []
    assert evaluator.notifier.flush(10)
    assert [(b["status"], b["note"]) for b in hook.wait_for(2)] == [("firing", None), ("resolved", "rule removed")]


def _stopped_with_a_firing_queued(
    tmp_path: Path, open_store: Callable[[], Any], traffic: Traffic, hook: Hook
) -> tuple[str, str, dict[str, Any]]:
    """A collector stopped while its webhook was down and a firing waited to be tried again:
    the rules file's text and path, and the event left ``queued``."""
    text = (
        '[[rules]]\nname = "loops"\nmetric = "loop_rate"\nwindow = "10m"\nthreshold = 0.3\nmin_samples = 5\n'
        f'notify = ["webhook:{hook.url}"]\n'
    )
    rules = write_rules(tmp_path, text)
    traffic.store.close()
    first = open_store()
    traffic.store = first
    runs(traffic, T0 - 5 * MIN, 10, loops=5)
    hook.script = [(503, 0.0)] * 3  # down: retried after 0.5 s, 1 s, ...
    evaluator = Evaluator(first.reader, rules, 30, notifier=Notifier(timeout=2.0, retries=20, backoff=0.5))
    evaluator.notifier.start()
    assert [r.state.state for r in evaluator.evaluate_once(T0)] == ["firing"]
    deadline = time.monotonic() + 10
    while hook.attempts < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    evaluator.stop()  # while it waits to try again
    [event] = overview(first)["events"]
    first.close()
    return text, rules, event


@BOTH_STORES
def test_a_notification_a_stop_cut_short_is_sent_at_the_next_start(
    tmp_path: Path, open_store: Callable[[], Any], traffic: Traffic, hook: Hook
) -> None:
    """The firing was marked notified when queued: a collector stopped while the webhook was down
    never sent it, and never would."""
    _, rules, event = _stopped_with_a_firing_queued(tmp_path, open_store, traffic, hook)
    assert event["notify_status"] == "queued" and event["notify_error"].startswith("stopped before it was delivered")
    assert 0 < event["id"] < 2**53  # exact in a JavaScript receiver (ClickHouse's were ~4.6e17)

    second = open_store()
    try:
        evaluator = make_evaluator(second, rules)
        assert [r.state.state for r in evaluator.evaluate_once(T0 + MIN)] == ["firing"]
        assert evaluator.notifier.flush(10)
        [body] = hook.wait_for(1)
        assert (body["status"], body["event_id"], body["note"]) == ("firing", event["id"], "sent again after a restart")
        assert overview(second)["events"][0]["notify_status"] == "sent"
        evaluator.evaluate_once(T0 + 2 * MIN)  # sent once
        assert evaluator.notifier.flush(10) and len(hook.received) == 1
        evaluator.stop()
    finally:
        second.close()


@BOTH_STORES
def test_a_queued_notification_of_a_rule_removed_while_stopped_is_sent_when_the_rule_comes_back(
    tmp_path: Path, open_store: Callable[[], Any], traffic: Traffic, hook: Hook
) -> None:
    """Its state stayed "firing, notified" and the queued firing was never sent: redelivery ran at start only."""
    import os

    text, rules, event = _stopped_with_a_firing_queued(tmp_path, open_store, traffic, hook)
    assert event["notify_status"] == "queued"
    Path(rules).write_text("")  # taken out while the collector was stopped
    os.utime(rules, ns=(10**9, 10**9))
    second = open_store()
    try:
        evaluator = make_evaluator(second, rules)
        assert evaluator.evaluate_once(T0 + MIN) == []
        Path(rules).write_text(text)  # and put back while it runs
        os.utime(rules, ns=(2 * 10**9, 2 * 10**9))
        evaluator.evaluate_once(T0 + 2 * MIN)
        assert evaluator.notifier.flush(10)
        [body] = hook.wait_for(1)
        assert (body["status"], body["event_id"], body["note"]) == (
            "firing",
            event["id"],
            "sent when its rule came back",
        )
        evaluator.evaluate_once(T0 + 3 * MIN)  # sent once
        assert evaluator.notifier.flush(10) and len(hook.received) == 1
        evaluator.stop()
    finally:
        second.close()
