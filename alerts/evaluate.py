"""Rule conditions and the alert lifecycle, as pure functions of measurements and a clock.

A rule's condition holds when its current window has at least ``min_samples`` samples and
its value passes the threshold (``op``, default ``>=``); in spike mode the value must also
be at least ``factor`` times the value of the baseline window just before the current one.
The lifecycle is ``ok -> pending -> firing -> resolved``: ``pending`` while the condition
has held for less than ``for``; ``firing`` notifies unless a firing notification went out
less than ``cooldown`` ago, and then notifies when the cooldown is over if it is still firing;
``resolved`` notifies only if its firing did.

Example:
    >>> from datetime import datetime
    >>> from loopsight.alerts.rules import parse_rules
    >>> rule = parse_rules('[[rules]]\\nname="x"\\nmetric="loop_rate"\\nwindow="5m"\\nthreshold=0.3')[0]
    >>> verdict = condition(rule, Measurement(0.5, 10, []), None)
    >>> verdict.met
    True
    >>> state, changes = advance(rule, RuleState(), verdict, datetime(2026, 1, 1))
    >>> state.state, changes[0].notify
    ('firing', True)
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from loopsight.alerts.rules import MetricSpec, Rule
from loopsight.analytics.metrics import Measurement

_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


class MetricSource(Protocol):
    """Anything that measures a metric over a window: the DuckDB file or the query API."""

    def measure(self, spec: MetricSpec, since: datetime, until: datetime) -> Measurement: ...


@dataclass(frozen=True)
class Verdict:
    """Whether a rule's condition holds now, and why."""

    met: bool
    reason: str
    current: Measurement
    baseline: Measurement | None = None

    @property
    def baseline_value(self) -> float | None:
        return self.baseline.value if self.baseline is not None else None


@dataclass(frozen=True)
class RuleState:
    """What the evaluator remembers about a rule between evaluations (and restarts)."""

    state: str = "ok"
    state_since: datetime | None = None
    pending_since: datetime | None = None
    last_notified_at: datetime | None = None
    notified_firing: bool = False


@dataclass(frozen=True)
class Transition:
    """A lifecycle change, stored in ``alert_events`` and, when ``notify``, sent out."""

    rule: str
    at: datetime
    from_state: str
    to_state: str
    value: float | None
    threshold: float
    baseline: float | None
    samples: int
    examples: list[str] = field(default_factory=list)
    notify: bool = False
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "at": self.at.isoformat() + "Z",
            "from_state": self.from_state,
            "to_state": self.to_state,
            "value": self.value,
            "threshold": self.threshold,
            "baseline": self.baseline,
            "samples": self.samples,
            "examples": list(self.examples),
        }


def windows(rule: Rule, now: datetime) -> tuple[tuple[datetime, datetime], tuple[datetime, datetime] | None]:
    """``(current, baseline)`` windows ending at ``now``; the baseline ends where the current starts."""
    start = now - timedelta(seconds=rule.window_seconds)
    if rule.baseline_seconds is None:
        return (start, now), None
    return (start, now), (start - timedelta(seconds=rule.baseline_seconds), start)


def condition(rule: Rule, current: Measurement, baseline: Measurement | None) -> Verdict:
    """Judge ``current`` (and ``baseline`` in spike mode) against the rule."""
    if current.samples < rule.min_samples:
        return Verdict(False, f"insufficient samples ({current.samples} < {rule.min_samples})", current, baseline)
    if current.value is None:
        return Verdict(False, "no data in the window", current, baseline)
    if not _OPS[rule.op](current.value, rule.threshold):
        return Verdict(False, f"not {rule.op} {rule.threshold:g}", current, baseline)
    if rule.spike:
        base = baseline.value if baseline is not None and baseline.value is not None else 0.0
        if current.value < rule.factor * base:
            return Verdict(False, f"below {rule.factor:g} x baseline {base:.4g}", current, baseline)
        return Verdict(
            True, f"{rule.op} {rule.threshold:g} and >= {rule.factor:g} x baseline {base:.4g}", current, baseline
        )
    return Verdict(True, f"{rule.op} {rule.threshold:g}", current, baseline)


def judge(source: MetricSource, rule: Rule, now: datetime) -> Verdict:
    """Measure the rule's windows through ``source`` and judge them."""
    (since, until), base = windows(rule, now)
    current = source.measure(rule.spec, since, until)
    baseline = source.measure(rule.spec, base[0], base[1]) if base is not None else None
    return condition(rule, current, baseline)


def advance(rule: Rule, state: RuleState, verdict: Verdict, now: datetime) -> tuple[RuleState, list[Transition]]:
    """The next state and the transitions that lead to it."""

    def change(to_state: str, notify: bool = False, note: str = "") -> Transition:
        return Transition(
            rule.name,
            now,
            state.state,
            to_state,
            verdict.current.value,
            rule.threshold,
            verdict.baseline_value,
            verdict.current.samples,
            list(verdict.current.examples),
            notify,
            note,
        )

    def fire() -> tuple[RuleState, list[Transition]]:
        cooling = state.last_notified_at is not None and now - state.last_notified_at < timedelta(
            seconds=rule.cooldown_seconds
        )
        if cooling:
            new = RuleState("firing", now, None, state.last_notified_at, False)
            return new, [change("firing", False, "cooldown")]
        return RuleState("firing", now, None, now, True), [change("firing", True)]

    if state.state in ("ok", "resolved"):
        if not verdict.met:
            return state, []
        if rule.for_seconds <= 0:
            return fire()
        return replace(state, state="pending", state_since=now, pending_since=now), [change("pending")]
    if state.state == "pending":
        if not verdict.met:
            return replace(state, state="ok", state_since=now, pending_since=None), [change("ok")]
        since = state.pending_since or now
        if now - since >= timedelta(seconds=rule.for_seconds):
            return fire()
        return state, []
    if state.state == "firing":
        if verdict.met:
            if state.notified_firing:
                return state, []
            fired, changes = fire()  # a firing the cooldown kept quiet: announced once it is over
            if not fired.notified_firing:
                return state, []
            return replace(fired, state_since=state.state_since), [replace(changes[0], note="cooldown over")]
        new = replace(state, state="resolved", state_since=now, notified_firing=False)
        return new, [
            change("resolved", state.notified_firing, "" if state.notified_firing else "firing was not notified")
        ]
    return RuleState(), []


def retire(rule: Rule, state: RuleState, now: datetime) -> tuple[RuleState, list[Transition]]:
    """A rule removed from the rules file: a firing alert resolves (announced when its firing
    was), a pending one goes back to ``ok``; either way with the note ``rule removed``."""
    if state.state not in ("firing", "pending"):
        return state, []
    to_state, notify = ("resolved", state.notified_firing) if state.state == "firing" else ("ok", False)
    new = replace(state, state=to_state, state_since=now, pending_since=None, notified_firing=False)
    return new, [
        Transition(rule.name, now, state.state, to_state, None, rule.threshold, None, 0, [], notify, "rule removed")
    ]
