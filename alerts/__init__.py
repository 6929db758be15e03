"""Alerts: rules over loop rate, tool failures, terminations, token burn and stalls.

Rules live in a TOML file (see docs/alerts.md). Inside the collector an
:class:`Evaluator` judges them every N seconds, stores the lifecycle
(``pending -> firing -> resolved``) in the DuckDB file and notifies webhooks, Slack and
the log; :func:`check` evaluates them once from the command line.

Example:
    >>> import loopsight.alerts as alerts
    >>> alerts.check("alerts.toml", db="./loopsight.duckdb")  # doctest: +SKIP
    0
"""

from loopsight.alerts.check import check
from loopsight.alerts.evaluate import RuleState, Transition, Verdict, advance, condition, judge
from loopsight.alerts.evaluator import Evaluator, RuleResult
from loopsight.alerts.gauges import AgentGauges
from loopsight.alerts.notify import Notification, Notifier, slack_payload, webhook_payload
from loopsight.alerts.prometheus import prometheus_lines
from loopsight.alerts.rules import (
    METRICS,
    MetricSpec,
    Rule,
    RulesError,
    Target,
    load_rules,
    parse_duration,
    parse_rules,
)
from loopsight.alerts.state import StateStore
from loopsight.analytics.alert_state import alert_series, alerts_overview
from loopsight.analytics.metrics import Gauge, Measurement, gauges, measure

__all__ = [
    "METRICS",
    "AgentGauges",
    "Evaluator",
    "Gauge",
    "Measurement",
    "MetricSpec",
    "Notification",
    "Notifier",
    "Rule",
    "RuleResult",
    "RuleState",
    "RulesError",
    "StateStore",
    "Target",
    "Transition",
    "Verdict",
    "advance",
    "alert_series",
    "alerts_overview",
    "check",
    "condition",
    "gauges",
    "judge",
    "load_rules",
    "measure",
    "parse_duration",
    "parse_rules",
    "prometheus_lines",
    "slack_payload",
    "webhook_payload",
]
