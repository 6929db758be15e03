"""Notifications: generic JSON webhook, Slack-compatible webhook, log; sent off the hot path.

:class:`Notifier` owns a bounded queue and a few background threads, each delivering the
notifications of its share of the rules in order (a rule's firing before its resolved), so a
slow or hanging webhook holds up its own rules only. ``submit`` never blocks: when the queue is
full the notification is dropped and counted. Each HTTP target gets a timeout (each read; a whole
attempt at most ``attempt_seconds``, twice the timeout) and retries with
exponential backoff on network errors, 429 and 5xx; other answers, redirects included, are final
(the answer's body is never read). Outcomes are counted for ``/metrics`` and reported to
``on_result``; a rule's ``log`` target is written before its webhooks are tried.

Example:
    >>> notifier = Notifier(timeout=2.0, retries=2)
    >>> notifier.start()
    >>> notifier.submit(notification)  # doctest: +SKIP
    True
    >>> notifier.stop()
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from loopsight.alerts.rules import Rule, Target
from loopsight.errors import LoopsightError

log = logging.getLogger("loopsight.alerts")

DEFAULT_DASHBOARD_URL = "http://127.0.0.1:8501/"


@dataclass(frozen=True)
class Notification:
    """One lifecycle change to announce (``status`` is ``firing`` or ``resolved``)."""

    rule: Rule
    status: str
    at: datetime
    value: float | None
    baseline: float | None
    samples: int
    examples: list[str] = field(default_factory=list)
    event_id: int | None = None
    dashboard_url: str | None = DEFAULT_DASHBOARD_URL
    note: str = ""
    """Why this notification, when it is not the plain one: ``rule removed``, ``cooldown over``,
    ``sent again after a restart``."""


def run_link(dashboard_url: str | None, trace_id: str) -> str | None:
    """Deep link to the dashboard's run view: ``http://127.0.0.1:8501/?run=<trace_id>``."""
    if not dashboard_url:
        return None
    return f"{dashboard_url}{'&' if '?' in dashboard_url else '?'}run={trace_id}"


def _fmt_value(value: float | None) -> str:
    return "no data" if value is None else f"{value:.4g}"


def summary(n: Notification) -> str:
    """One line: ``[FIRING] loop-rate: loop_rate = 0.42 (>= 0.3 over 5m, 12 samples)``."""
    rule = n.rule
    spec = rule.describe()
    filters = ", ".join(f"{k}={v}" for k, v in spec["filters"].items())
    spike = f", baseline {_fmt_value(n.baseline)} x{rule.factor:g}" if rule.spike else ""
    return (
        f"[{n.status.upper()}] {rule.name}: {rule.metric}{f' ({filters})' if filters else ''} = "
        f"{_fmt_value(n.value)} ({rule.op} {rule.threshold:g} over {spec['window']}{spike}, {n.samples} samples)"
        + (f" - {n.note}" if n.note else "")
    )


def webhook_payload(n: Notification) -> dict[str, Any]:
    """The generic JSON body (documented in docs/alerts.md)."""
    return {
        "version": 1,
        "status": n.status,
        "rule": n.rule.name,
        "metric": n.rule.metric,
        "value": n.value,
        "threshold": n.rule.threshold,
        "op": n.rule.op,
        "baseline_value": n.baseline,
        "factor": n.rule.factor if n.rule.spike else None,
        "samples": n.samples,
        "window": n.rule.describe()["window"],
        "filters": n.rule.spec.filters(),
        "description": n.rule.description,
        "at": n.at.isoformat() + "Z",
        "event_id": n.event_id,
        "note": n.note or None,
        "summary": summary(n),
        "examples": [{"trace_id": t, "url": run_link(n.dashboard_url, t)} for t in n.examples],
    }


def slack_payload(n: Notification) -> dict[str, Any]:
    """``text`` (for notifications and old clients) plus Block Kit blocks with run links."""
    emoji = ":rotating_light:" if n.status == "firing" else ":white_check_mark:"
    line = _mrkdwn(summary(n))
    text = f"{emoji} {line}"
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": f"{emoji} *{line}*"}}]
    if n.rule.description:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _mrkdwn(n.rule.description)}]})
    if n.examples:
        links = []
        for trace_id in n.examples:
            url = run_link(n.dashboard_url, trace_id)
            links.append(f"<{url}|{trace_id[:12]}>" if url else f"`{trace_id}`")
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": "Example runs: " + " · ".join(links)}})
    return {"text": text, "blocks": blocks}


def _mrkdwn(text: str) -> str:
    """Text as Slack shows it literally: ``&``, ``<`` and ``>`` escaped (Slack reads ``<…>`` as a link).

    Example:
        >>> _mrkdwn("p95 < 2s & <b>")
        'p95 &lt; 2s &amp; &lt;b&gt;'
    """
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cut_short(client: httpx.Client, cut: threading.Event) -> None:
    """End an attempt that outlived its time: closing its client fails the read in progress."""
    cut.set()
    with contextlib.suppress(Exception):
        client.close()


class DeliveryError(LoopsightError):
    """A target did not accept the notification after every attempt."""


@dataclass
class NotifierStats:
    """Counters for ``/metrics`` (by target kind)."""

    sent: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    retries: Counter[str] = field(default_factory=Counter)
    dropped: int = 0


class Notifier:
    """Delivers notifications on a background thread from a bounded queue."""

    def __init__(
        self,
        *,
        timeout: float = 5.0,
        attempt_seconds: float | None = None,
        retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        max_queue: int = 1000,
        workers: int = 4,
        on_result: Callable[[Notification, str, str | None], None] | None = None,
    ) -> None:
        self.timeout = timeout
        self.attempt_seconds = attempt_seconds if attempt_seconds is not None else 2 * timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.on_result = on_result
        self.stats = NotifierStats()
        self.max_queue = max_queue
        self._queues: list[queue.Queue[Notification | None]] = [queue.Queue() for _ in range(max(1, workers))]
        self._stop = threading.Event()
        self._idle = threading.Condition()
        self._busy = 0  # submitted and not yet delivered or failed: at most max_queue
        self._threads: list[threading.Thread] = []

    @property
    def queue_depth(self) -> int:
        return sum(q.qsize() for q in self._queues)

    def start(self) -> None:
        """Start the delivery threads (idempotent)."""
        if not self._threads:
            for n, shard in enumerate(self._queues):
                thread = threading.Thread(
                    target=self._run, args=(shard,), name=f"loopsight-alert-notifier-{n}", daemon=True
                )
                self._threads.append(thread)
                thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop after the notifications in hand; queued ones are left (their events stay ``queued``,
        and the evaluator sends them at its next start), as is one cut short while retrying."""
        self._stop.set()
        for shard in self._queues:
            shard.put_nowait(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def submit(self, notification: Notification) -> bool:
        """Queue without blocking; ``False`` (and counted as dropped) when the queue is full."""
        with self._idle:
            if self._busy >= self.max_queue:
                self.stats.dropped += 1
                log.error("alert notification queue is full: dropped %s", summary(notification))
                self._report(notification, "dropped", "notification queue full")
                return False
            self._busy += 1
            # a rule's notifications go to one thread, in order; a stable hash: the same thread every run
            self._queues[zlib.crc32(notification.rule.name.encode()) % len(self._queues)].put_nowait(notification)
        return True

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every submitted notification is delivered or failed (for tests and shutdown)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._busy == 0, timeout)

    def _run(self, shard: queue.Queue[Notification | None]) -> None:
        while True:
            item = shard.get()
            if item is None or self._stop.is_set():
                return
            try:
                self.deliver(item)
            except Exception as exc:  # a defect in one notification must not end its thread's deliveries
                log.exception("alert %r: notification could not be built", item.rule.name)
                self._report(item, "failed", f"{type(exc).__name__}: {exc}")
            finally:
                with self._idle:
                    self._busy -= 1
                    self._idle.notify_all()

    def deliver(self, n: Notification) -> None:
        """Send to every target of the rule (blocking; the thread calls this)."""
        errors = []
        for target in sorted(n.rule.notify, key=lambda t: t.kind != "log"):  # the log at once, whatever the hooks do
            try:
                self._send(target, n)
                self.stats.sent[target.kind] += 1
            except Exception as exc:  # one target's failure, whatever it is, never keeps the next from its turn
                why = str(exc) if isinstance(exc, DeliveryError) else f"{type(exc).__name__}: {exc}"
                self.stats.failed[target.kind] += 1
                errors.append(f"{target.redacted}: {why}")
                log.error("alert %r: notification to %s failed: %s", n.rule.name, target.redacted, why)
        if errors and self._stop.is_set():  # cut short by a shutdown, not refused: left for the next start
            self._report(n, "queued", "stopped before it was delivered: " + "; ".join(errors))
            return
        self._report(n, "failed" if errors else "sent", "; ".join(errors) or None)

    def _report(self, n: Notification, status: str, error: str | None) -> None:
        if self.on_result is None:
            return
        try:
            self.on_result(n, status, error)
        except Exception as exc:  # reporting must never kill the delivery thread
            log.error("alert %r: could not record notification status: %s", n.rule.name, exc)

    def _send(self, target: Target, n: Notification) -> None:
        if target.kind == "log":
            log.warning("alert %s", summary(n))
            return
        assert target.url is not None
        body = slack_payload(n) if target.kind == "slack" else webhook_payload(n)
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self.stats.retries[target.kind] += 1
                if self._stop.wait(min(self.backoff * 2 ** (attempt - 1), self.max_backoff)):
                    raise DeliveryError(f"stopped while retrying (last: {last})")
            client = httpx.Client(timeout=self.timeout, follow_redirects=False)
            cut = threading.Event()
            # the timeout bounds each read; a hook trickling its headers is cut when the attempt is over
            timer = threading.Timer(self.attempt_seconds, _cut_short, (client, cut))
            timer.daemon = True
            timer.start()
            try:
                with client.stream("POST", target.url, json=body) as response:
                    status = response.status_code  # the body is never read: a hook's answer can be any size
            except httpx.TimeoutException:
                last = f"timed out after {self.timeout:g}s"
                continue
            except httpx.InvalidURL as exc:
                raise DeliveryError(f"invalid URL: {exc} (not retried)") from None
            except httpx.HTTPError as exc:
                last = f"no answer within {self.attempt_seconds:g}s" if cut.is_set() else f"{type(exc).__name__}: {exc}"
                continue
            finally:
                timer.cancel()
                client.close()
            if status < 300:
                return
            last = f"HTTP {status}"
            if status != 429 and status < 500:
                raise DeliveryError(f"{last} (not retried)")
        raise DeliveryError(f"{last} after {self.retries + 1} attempts")
