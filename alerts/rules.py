"""Alert rules: parse a TOML rules file and validate every key, naming the line on error.

Example:
    >>> rules = parse_rules('''
    ... [[rules]]
    ... name = "loop-rate"
    ... metric = "loop_rate"
    ... window = "5m"
    ... threshold = 0.3
    ... ''')
    >>> rules[0].window_seconds, rules[0].min_samples
    (300.0, 5)
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from loopsight.analytics.metrics import METRICS, RATE_METRICS, STATS, MetricSpec
from loopsight.attributes import ERROR_CLASSES, TERMINATION_REASONS
from loopsight.config import host_port, parse_duration
from loopsight.errors import LoopsightError

OPS = (">", ">=", "<", "<=")

# Which optional keys make sense for which metric (a key outside its metric is an error,
# because a silently ignored filter would page on the wrong traffic).
_TOOL_METRICS = frozenset({"loop_rate", "tool_fail_rate", "error_class_rate", "stall_rate"})
_COMMON_KEYS = frozenset(
    {
        "name",
        "metric",
        "window",
        "threshold",
        "op",
        "baseline",
        "factor",
        "min_samples",
        "for",
        "cooldown",
        "notify",
        "service",
        "agent",
        "description",
    }
)
METRIC_KEYS: dict[str, frozenset[str]] = {
    "loop_rate": frozenset({"tool"}),
    "tool_fail_rate": frozenset({"tool", "error_class"}),
    "error_class_rate": frozenset({"tool", "error_class"}),
    "termination_rate": frozenset({"reason"}),
    "tokens_per_run": frozenset({"stat"}),
    "stall_rate": frozenset({"tool"}),
    "stuck_runs": frozenset({"stuck_after"}),
    "cost_per_run": frozenset({"stat"}),
    "cost": frozenset(),
}
"""The filters and parameters each metric takes beyond ``service`` and ``agent`` (a rule's keys,
``/api/v1/alerts/metric``'s parameters)."""
REQUIRED_KEYS = {"error_class_rate": "error_class", "termination_rate": "reason"}
"""The metrics that measure nothing without one of their keys."""
_ALL_KEYS = _COMMON_KEYS | {k for keys in METRIC_KEYS.values() for k in keys}


class RulesError(LoopsightError, ValueError):
    """An invalid rules file; the message names the file, line, rule and key."""


@dataclass(frozen=True)
class Target:
    """Where a notification goes: ``webhook:URL``, ``slack:URL`` or ``log``."""

    kind: str
    url: str | None = None

    @property
    def redacted(self) -> str:
        """The target without secrets (webhook paths often carry tokens): ``slack:https://host/…``."""
        if self.url is None:
            return self.kind
        parts = urlsplit(self.url)  # hostname and port only: a user:password@ in the URL is a secret too
        try:
            port = parts.port or None
        except ValueError:  # a port that is not one: nothing of it is shown
            port = None
        return f"{self.kind}:{parts.scheme}://{host_port(parts.hostname or '', port)}/…"


@dataclass(frozen=True)
class Rule:
    """One validated rule."""

    name: str
    spec: MetricSpec
    window_seconds: float
    threshold: float
    op: str = ">="
    baseline_seconds: float | None = None
    factor: float = 2.0
    min_samples: int = 5
    for_seconds: float = 0.0
    cooldown_seconds: float = 0.0
    notify: tuple[Target, ...] = (Target("log"),)
    description: str = ""
    source: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def metric(self) -> str:
        return self.spec.metric

    @property
    def spike(self) -> bool:
        """Spike mode: the current window is compared with the baseline window before it."""
        return self.baseline_seconds is not None

    def describe(self) -> dict[str, Any]:
        """JSON-ready definition, notification targets redacted."""
        return {
            "name": self.name,
            "metric": self.metric,
            "window": _fmt(self.window_seconds),
            "threshold": self.threshold,
            "op": self.op,
            "baseline": _fmt(self.baseline_seconds) if self.baseline_seconds is not None else None,
            "factor": self.factor if self.spike else None,
            "min_samples": self.min_samples,
            "for": _fmt(self.for_seconds),
            "cooldown": _fmt(self.cooldown_seconds),
            "filters": self.spec.filters(),
            "notify": [t.redacted for t in self.notify],
            "description": self.description,
        }


def _fmt(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _locate(text: str, index: int, key: str | None) -> int | None:
    """1-based line of ``key`` inside the ``index``-th ``[[rules]]`` table (or of its header)."""
    header = re.compile(r"^\s*\[\[\s*rules\s*\]\]")
    any_table = re.compile(r"^\s*\[")
    seen = -1
    start = None
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if header.match(line):
            seen += 1
            if seen == index:
                start = number
                continue
        if start is not None and seen == index and number > start:
            if any_table.match(line):
                break
            if key is not None and re.match(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=", line):
                return number
    return start


class _RuleReader:
    def __init__(self, raw: dict[str, Any], index: int, text: str, origin: str) -> None:
        self.raw = raw
        self.index = index
        self.text = text
        self.origin = origin
        self.label = f"rule {raw['name']!r}" if isinstance(raw.get("name"), str) else f"rule #{index + 1}"

    def fail(self, key: str | None, message: str) -> RulesError:
        line = _locate(self.text, self.index, key)
        where = f"{self.origin}:{line}" if line else self.origin
        what = f"{self.label}, key {key!r}" if key else self.label
        return RulesError(f"{where}: {what}: {message}")

    def text_value(self, key: str, *, required: bool = False, choices: tuple[str, ...] | None = None) -> str | None:
        if key not in self.raw:
            if required:
                raise self.fail(None, f"missing required key {key!r}")
            return None
        value = self.raw[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, f"must be a non-empty string, got {_shown(value)}")
        if len(value) > MAX_TEXT:  # what the query API takes (alerts check --collector asks it)
            raise self.fail(key, f"is longer than {MAX_TEXT} characters")
        if choices is not None and value not in choices:
            hint = difflib.get_close_matches(value, choices, 1)
            extra = f" (did you mean {hint[0]!r}?)" if hint else ""
            raise self.fail(key, f"{value!r} is not one of {', '.join(choices)}{extra}")
        return value

    def number(
        self,
        key: str,
        default: float | None,
        *,
        required: bool = False,
        positive: bool = False,
        minimum: float | None = None,
    ) -> float | None:
        if key not in self.raw:
            if required:
                raise self.fail(None, f"missing required key {key!r}")
            return default
        value = self.raw[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
            raise self.fail(key, f"must be a finite number, got {_shown(value)}")
        if positive and value <= 0:
            raise self.fail(key, f"must be greater than 0, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.fail(key, f"must be at least {minimum:g}, got {value!r}")
        return float(value)

    def integer(self, key: str, default: int) -> int:
        if key not in self.raw:
            return default
        value = self.raw[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(key, f"must be a whole number >= 0, got {value!r}")
        return value

    def duration(
        self, key: str, default: float | None, *, required: bool = False, positive: bool = False
    ) -> float | None:
        if key not in self.raw:
            if required:
                raise self.fail(None, f"missing required key {key!r}")
            return default
        try:
            seconds = parse_duration(self.raw[key])
        except ValueError as exc:
            raise self.fail(key, str(exc)) from None
        if positive and seconds <= 0:
            raise self.fail(key, f"must be longer than 0s, got {self.raw[key]!r}")
        return seconds

    def targets(self) -> tuple[Target, ...]:
        if "notify" not in self.raw:
            return (Target("log"),)
        value = self.raw["notify"]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(
                "notify", f'must be a list of strings like "webhook:URL", "slack:URL", "log", got {value!r}'
            )
        out = []
        for item in value:
            kind, _, url = item.partition(":")
            kind = kind.strip().lower()
            if kind == "log" and not url:
                out.append(Target("log"))
                continue
            if kind not in ("webhook", "slack"):
                raise self.fail("notify", f'{item!r}: a target is "webhook:URL", "slack:URL" or "log"')
            try:
                parts = urlsplit(url.strip())
                usable = parts.scheme in ("http", "https") and bool(parts.hostname)
                parts.port  # noqa: B018 - raises for a port that is not a number from 0 to 65535
            except ValueError as exc:
                raise self.fail("notify", f"{_shown(item)}: not a URL ({exc})") from None
            if not usable:
                raise self.fail(
                    "notify", f'{_shown(item)}: {kind} needs an http(s) URL, like "{kind}:https://host/path"'
                )
            out.append(Target(kind, url.strip()))
        return tuple(out)


MAX_TEXT = 512
"""The longest agent, service or tool name a rule filters by (as ``/api/v1/alerts/metric`` takes)."""
MAX_STUCK_AFTER = 366 * 86400.0
"""The longest ``stuck_after`` (as ``/api/v1/alerts/metric`` takes)."""


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer of hundreds of digits
        return False


def _shown(value: Any) -> str:
    """``repr(value)``, its first 80 characters: the error line stays a line."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _rule(raw: Any, index: int, text: str, origin: str) -> Rule:
    if not isinstance(raw, dict):
        line = _locate(text, index, None)
        raise RulesError(f"{origin}:{line or '?'}: rule #{index + 1} must be a table ([[rules]]), got {raw!r}")
    r = _RuleReader(raw, index, text, origin)
    name = r.text_value("name", required=True)
    metric = r.text_value("metric", required=True, choices=METRICS)
    assert name is not None and metric is not None
    allowed = _COMMON_KEYS | METRIC_KEYS[metric]
    for key in raw:
        if key not in allowed:
            if key in _ALL_KEYS:
                raise r.fail(
                    key,
                    f"does not apply to metric {metric!r} (its keys: {', '.join(sorted(METRIC_KEYS[metric])) or 'none'})",
                )
            hint = difflib.get_close_matches(key, sorted(allowed), 1)
            raise r.fail(key, "unknown key" + (f" (did you mean {hint[0]!r}?)" if hint else ""))

    window = r.duration("window", None, required=True, positive=True)
    threshold = r.number("threshold", None, required=metric != "stuck_runs")
    if threshold is None:
        threshold = 1.0
    op = r.text_value("op", choices=OPS) or ">="
    if metric in RATE_METRICS and not 0 <= threshold <= 1:
        raise r.fail("threshold", f"{metric} is a fraction between 0 and 1, got {threshold:g}")
    baseline = r.duration("baseline", None, positive=True)
    if "factor" in raw and baseline is None:
        raise r.fail("factor", 'only applies in spike mode: add baseline = "1h" (the window to compare with)')
    factor = r.number("factor", 2.0, positive=True)
    if baseline is not None and op not in (">", ">="):
        raise r.fail("op", 'spike mode (baseline) detects rises: use op ">" or ">="')
    error_class = r.text_value("error_class", choices=ERROR_CLASSES)
    reason = r.text_value("reason", choices=TERMINATION_REASONS)
    needed = REQUIRED_KEYS.get(metric)
    if needed is not None and {"error_class": error_class, "reason": reason}[needed] is None:
        choices = ERROR_CLASSES if needed == "error_class" else TERMINATION_REASONS
        raise r.fail(None, f"metric {metric!r} needs {needed} (one of {', '.join(choices)})")
    stuck_after = r.duration("stuck_after", 300.0, positive=True)
    assert window is not None and stuck_after is not None and factor is not None
    if window < 1:
        raise r.fail("window", f"must be at least 1s (windows are measured in whole seconds), got {raw['window']!r}")
    if stuck_after > MAX_STUCK_AFTER:
        raise r.fail("stuck_after", f"must be at most 366d, got {raw['stuck_after']!r}")
    if metric == "stuck_runs" and window <= stuck_after:
        raise r.fail(
            "window",
            f"must be longer than stuck_after ({_fmt(stuck_after)}): runs idle for stuck_after are looked for within the window",
        )
    default_min = 5 if metric in RATE_METRICS else (1 if metric in ("tokens_per_run", "cost_per_run", "cost") else 0)
    spec = MetricSpec(
        metric=metric,
        service=r.text_value("service"),
        agent=r.text_value("agent"),
        tool=r.text_value("tool"),
        error_class=error_class,
        reason=reason,
        stat=r.text_value("stat", choices=STATS) or "p95",
        stuck_after_seconds=stuck_after,
    )
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise r.fail("description", f"must be a string, got {description!r}")
    return Rule(
        name=name,
        spec=spec,
        window_seconds=window,
        threshold=threshold,
        op=op,
        baseline_seconds=baseline,
        factor=factor,
        min_samples=r.integer("min_samples", default_min),
        for_seconds=r.duration("for", 0.0) or 0.0,
        cooldown_seconds=r.duration("cooldown", 0.0) or 0.0,
        notify=r.targets(),
        description=description,
        source=dict(raw),
    )


def parse_rules(text: str, origin: str = "<rules>") -> list[Rule]:
    """Validate the text of a rules file; raises :class:`RulesError` naming line, rule and key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(f"{origin}: not valid TOML: {exc}") from None
    extra = sorted(set(data) - {"rules"})
    if extra:
        line = next(
            (n for n, row in enumerate(text.splitlines(), 1) if re.match(rf"^\s*\[?\s*{re.escape(extra[0])}\b", row)),
            None,
        )
        raise RulesError(f"{origin}:{line or '?'}: unknown top-level key {extra[0]!r}: rules go in [[rules]] tables")
    raw_rules = data.get("rules", [])
    if not isinstance(raw_rules, list):
        raise RulesError(f"{origin}: 'rules' must be an array of tables written as [[rules]]")
    rules = [_rule(raw, i, text, origin) for i, raw in enumerate(raw_rules)]
    seen: dict[str, int] = {}
    for i, rule in enumerate(rules):
        if rule.name in seen:
            line = _locate(text, i, "name")
            raise RulesError(
                f"{origin}:{line}: rule {rule.name!r}, key 'name': duplicate name (also rule #{seen[rule.name] + 1})"
            )
        seen[rule.name] = i
    return rules


def load_rules(path: str | Path) -> list[Rule]:
    """Read and validate a rules file.

    Example:
        >>> load_rules("alerts.toml")  # doctest: +SKIP
        [Rule(name='loop-rate', ...)]
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")  # a byte-order mark (Windows Notepad) is not TOML
    except FileNotFoundError:
        raise RulesError(f"{path}: rules file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RulesError(f"{path}: cannot read the rules file: {exc}") from None
    return parse_rules(text, str(path))
