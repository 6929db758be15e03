"""The in-collector evaluator: every N seconds, judge each rule, store transitions, notify.

Runs on its own thread with its own store cursors (DuckDB or ClickHouse), so ingest never waits for it, and
hands notifications to a :class:`~loopsight.alerts.notify.Notifier` (bounded queue, its own
thread). The clock is injectable: tests call :meth:`Evaluator.evaluate_once` with ``now``.

Example:
    >>> evaluator = Evaluator(store.reader, "alerts.toml", 30, dashboard_url="http://127.0.0.1:8501/")  # doctest: +SKIP
    >>> evaluator.start()  # doctest: +SKIP
    >>> evaluator.prometheus_lines()[:2]  # doctest: +SKIP
    ['# HELP loopsight_runs Runs started in the gauge window ...', '# TYPE loopsight_runs gauge']
    >>> evaluator.stop()  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from loopsight.alerts.evaluate import RuleState, Transition, Verdict, advance, judge, retire
from loopsight.alerts.notify import DEFAULT_DASHBOARD_URL, Notification, Notifier
from loopsight.alerts.prometheus import prometheus_lines
from loopsight.alerts.rules import Rule, RulesError, load_rules
from loopsight.alerts.state import state_store
from loopsight.analytics.metrics import GAUGE_WINDOW_SECONDS, Gauge, Measurement, ReaderMeasures, gauges, store_clock
from loopsight.stores import STORE_ERRORS
from loopsight.stores.protocol import Reader

log = logging.getLogger("loopsight.alerts")

SETTLE_SECONDS = 1.0
"""A rules file changed less than this long ago is read at a later evaluation: an editor's save
(truncate, then write) is not taken for a file without rules."""
REDELIVER_WITHIN = timedelta(days=1)
"""At start, notifications queued this recently and never delivered (the process stopped) are sent."""


def utcnow() -> datetime:
    """Naive UTC now (the store's time convention)."""
    return datetime.now(UTC).replace(tzinfo=None)


@dataclass(frozen=True)
class RuleResult:
    """One rule after one evaluation."""

    rule: Rule
    verdict: Verdict | None
    state: RuleState
    transitions: list[Transition]
    error: str | None = None


class Evaluator:
    """Evaluates a rules file against the store on a background thread."""

    def __init__(
        self,
        reader_factory: Callable[[], Reader],
        rules_path: str,
        interval_seconds: float = 30.0,
        dashboard_url: str | None = None,
        *,
        clock: Callable[[], datetime] = utcnow,
        notifier: Notifier | None = None,
        gauge_window_seconds: float = GAUGE_WINDOW_SECONDS,
        totals_since: datetime | None = None,
    ) -> None:
        """``totals_since``: where the cost counters of /metrics start, by the store's clock
        (default: its clock at the first evaluation)."""
        self.reader_factory = reader_factory
        self.rules_path = str(rules_path)
        self.interval_seconds = interval_seconds
        self.dashboard_url = dashboard_url or DEFAULT_DASHBOARD_URL
        self.clock = clock
        self.totals_since = totals_since  # the cost counters of /metrics count the model calls received since
        self.gauge_window = timedelta(seconds=gauge_window_seconds)
        self.state_store = state_store(reader_factory)
        self.notifier = notifier or Notifier()
        self.notifier.on_result = self._record_delivery
        self.rules: list[Rule] = load_rules(self.rules_path)
        self._rules_mtime = self._mtime()
        self._states: dict[str, RuleState] = {}
        self._synced = False
        self._redelivered = False
        self._returned: set[str] = set()  # rules added back since the last evaluation: their queued notifications
        self._removed: list[Rule] = []  # taken out of the rules file since the last sync: their alerts end
        self._gauges: list[Gauge] = []
        self._results: dict[str, RuleResult] = {}
        self.evaluations = 0
        self.errors = 0
        self.last_evaluated_at: datetime | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _mtime(self) -> float | None:
        try:
            return os.stat(self.rules_path).st_mtime_ns
        except OSError:
            return None

    def _reload_if_changed(self) -> None:
        mtime = self._mtime()
        if mtime == self._rules_mtime:
            return
        if mtime is not None and time.time_ns() - mtime < SETTLE_SECONDS * 1e9:
            return  # still being written: read it at the next evaluation
        self._rules_mtime = mtime
        try:
            rules = load_rules(self.rules_path)
        except RulesError as exc:
            log.error("rules file changed but is invalid, keeping the previous rules: %s", exc)
            return
        names = {rule.name for rule in rules}
        self._returned |= names - {rule.name for rule in self.rules}
        self._removed += [rule for rule in self.rules if rule.name not in names]
        if self.rules and not rules:
            log.warning("the rules file %s now holds no rules: every alert ends", self.rules_path)
        self.rules = rules
        self._synced = False
        log.info("reloaded %d alert rule(s) from %s", len(self.rules), self.rules_path)

    def start(self) -> None:
        """Start the notifier and the evaluation thread (first evaluation right away)."""
        self.notifier.start()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="loopsight-alert-evaluator", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop evaluating and stop the notifier (a notification in flight gets ``timeout``)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.notifier.stop(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.evaluate_once()
            except Exception as exc:  # a broken evaluation must not end alerting for good
                self.errors += 1
                log.error("alert evaluation failed: %s", exc)
            self._stop.wait(self.interval_seconds)

    def evaluate_once(self, now: datetime | None = None) -> list[RuleResult]:
        """Judge every rule at ``now`` (default: the clock), persist, queue notifications."""
        now = now or self.clock()
        with self._lock:
            self._reload_if_changed()
            if not self._synced:
                self._retire_removed(now)
                self._states = self.state_store.sync_rules(self.rules)
                self._synced = True
            if not self._redelivered:
                self._redeliver(now)
                self._redelivered = True
            elif self._returned:  # removed while stopped, its notification left queued, now back
                self._redeliver(now, only=self._returned, note="sent when its rule came back")
            self._returned = set()
            results = []
            con = self.reader_factory()
            try:
                source = ReaderMeasures(con)
                for rule in self.rules:
                    results.append(self._evaluate_rule(source, rule, now))
                try:
                    if self.totals_since is None:
                        self.totals_since = store_clock(con)
                    self._gauges = gauges(
                        con, now - self.gauge_window, now, source.cache, totals_since=self.totals_since
                    )
                except STORE_ERRORS as exc:
                    self.errors += 1
                    log.error("alert gauges failed: %s", exc)
            finally:
                con.close()
            if self.evaluations % 100 == 0:
                self.state_store.prune(now)
            self.evaluations += 1
            self.last_evaluated_at = now
            self._results = {r.rule.name: r for r in results}
            return results

    def _retire_removed(self, now: datetime) -> None:
        """End the alerts of the rules taken out of the file (the rule as last loaded notifies)."""
        removed, self._removed = self._removed, []
        kept = {rule.name for rule in self.rules}
        for rule in (r for r in removed if r.name not in kept):  # not put back by a later edit
            state = self._states.pop(rule.name, RuleState())
            new_state, transitions = retire(rule, state, now)
            if transitions:
                verdict = Verdict(False, "rule removed", Measurement(None, 0))
                try:
                    event_ids = self.state_store.save(rule, new_state, verdict, transitions, now)
                except STORE_ERRORS as exc:
                    self.errors += 1
                    log.error("alert rule %r was removed but its end could not be recorded: %s", rule.name, exc)
                    continue
                self._announce(rule, transitions, event_ids, now)

    def _redeliver(self, now: datetime, only: set[str] | None = None, note: str = "sent again after a restart") -> None:
        """Send the notifications a stopped process left queued (at least once: a target that had
        them before the stop gets them again), of the rules named ``only`` if given."""
        try:
            pending = self.state_store.undelivered(now - REDELIVER_WITHIN)
        except STORE_ERRORS as exc:
            self.errors += 1
            log.error("undelivered alert notifications could not be read: %s", exc)
            return
        rules = {rule.name: rule for rule in self.rules}
        for event in pending:
            rule = rules.get(event["rule"])
            if rule is None or (only is not None and rule.name not in only):
                continue
            log.info("alert %r: sending the %s notification a stop left queued", rule.name, event["to_state"])
            self.notifier.submit(
                Notification(
                    rule,
                    event["to_state"],
                    event["occurred_at"],
                    event["value"],
                    event["baseline"],
                    event["samples"],
                    list(event["examples"] or []),
                    int(event["id"]),
                    self.dashboard_url,
                    note,
                )
            )

    def _evaluate_rule(self, source: ReaderMeasures, rule: Rule, now: datetime) -> RuleResult:
        state = self._states.get(rule.name, RuleState())
        try:
            verdict = judge(source, rule, now)
            new_state, transitions = advance(rule, state, verdict, now)
            event_ids = self.state_store.save(rule, new_state, verdict, transitions, now)
        except STORE_ERRORS as exc:
            self.errors += 1
            log.error("alert rule %r could not be evaluated: %s", rule.name, exc)
            return RuleResult(rule, None, state, [], str(exc))
        self._states[rule.name] = new_state
        self._announce(rule, transitions, event_ids, now)
        return RuleResult(rule, verdict, new_state, transitions)

    def _announce(self, rule: Rule, transitions: list[Transition], event_ids: list[int], now: datetime) -> None:
        """Log each transition and queue the notifications it calls for."""
        for transition, event_id in zip(transitions, event_ids, strict=False):
            log.info(
                "alert %r: %s -> %s (value %s, %d samples)",
                rule.name,
                transition.from_state,
                transition.to_state,
                transition.value,
                transition.samples,
            )
            if transition.notify:
                self.notifier.submit(
                    Notification(
                        rule,
                        transition.to_state,
                        now,
                        transition.value,
                        transition.baseline,
                        transition.samples,
                        transition.examples,
                        event_id,
                        self.dashboard_url,
                        transition.note,
                    )
                )

    def _record_delivery(self, notification: Notification, status: str, error: str | None) -> None:
        if notification.event_id is not None:  # a delivered note (rule removed, ...) is kept
            self.state_store.set_notify_status(notification.event_id, status, error or notification.note or None)

    def prometheus_lines(self) -> list[str]:
        """Prometheus text lines: metric gauges, per-rule state and notifier counters (no DB access)."""
        series = list(self._gauges)
        for name, result in sorted(self._results.items()):
            labels = (("rule", name),)
            value = result.verdict.current.value if result.verdict is not None else None
            series.append(
                Gauge(
                    "loopsight_alert_value",
                    float("nan") if value is None else value,
                    labels,
                    "The value of each alert rule's metric at the last evaluation.",
                )
            )
            series.append(
                Gauge(
                    "loopsight_alert_firing",
                    1.0 if result.state.state == "firing" else 0.0,
                    labels,
                    "1 while the alert rule is firing.",
                )
            )
        stats = self.notifier.stats
        for kind in ("webhook", "slack", "log"):
            series.append(
                Gauge(
                    "loopsight_alert_notifications_sent_total",
                    float(stats.sent[kind]),
                    (("target", kind),),
                    "Notifications delivered, by target kind.",
                )
            )
            series.append(
                Gauge(
                    "loopsight_alert_notifications_failed_total",
                    float(stats.failed[kind]),
                    (("target", kind),),
                    "Notifications that failed after every retry, by target kind.",
                )
            )
            series.append(
                Gauge(
                    "loopsight_alert_notification_retries_total",
                    float(stats.retries[kind]),
                    (("target", kind),),
                    "Notification attempts retried, by target kind.",
                )
            )
        series.append(
            Gauge(
                "loopsight_alert_notifications_dropped_total",
                float(stats.dropped),
                (),
                "Notifications dropped because the queue was full.",
            )
        )
        series.append(
            Gauge(
                "loopsight_alert_notification_queue_depth",
                float(self.notifier.queue_depth),
                (),
                "Notifications waiting to be sent.",
            )
        )
        series.append(
            Gauge(
                "loopsight_alert_evaluations_total", float(self.evaluations), (), "Alert evaluation rounds completed."
            )
        )
        series.append(
            Gauge(
                "loopsight_alert_evaluation_errors_total", float(self.errors), (), "Alert rule evaluations that failed."
            )
        )
        return prometheus_lines(series)
