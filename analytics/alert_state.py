"""The alert evaluator's state as the Alerts page and ``/api/v1/alerts`` read it.

Both engines hold the views ``alert_rules_current`` and ``alert_events_current`` (DuckDB
migration 0008, ClickHouse migration 0013), so these questions are written once.

Example:
    >>> alerts_overview(reader)["rules"][0]["state"]  # doctest: +SKIP
    'firing'
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from loopsight.stores.protocol import Reader

_RULES = """
SELECT r.name, r.definition, r.active, r.state, r.state_since, r.value, r.baseline AS baseline_value,
       r.samples, r.examples, r.last_evaluated_at, r.last_notified_at,
       coalesce(f.failures, 0) AS notify_failures
FROM alert_rules_current r
LEFT JOIN (SELECT rule, count(*) AS failures FROM alert_events_current WHERE notify_status = 'failed' GROUP BY rule) f
       ON f.rule = r.name
WHERE (r.active OR $inactive::BOOLEAN) AND ($rule::VARCHAR IS NULL OR r.name = $rule)
ORDER BY r.name
"""

_EVENTS = """
SELECT id, rule, occurred_at AS at, from_state, to_state, value, threshold, baseline, samples,
       coalesce(examples, []) AS examples, notify_status, notify_error
FROM alert_events_current
WHERE ($rule::VARCHAR IS NULL OR rule = $rule)
ORDER BY occurred_at DESC, id DESC
LIMIT $limit
"""

_SERIES = """
SELECT sampled_at AS at, value, samples FROM (
    SELECT sampled_at, value, samples FROM alert_samples
    WHERE rule = $rule::VARCHAR AND ($since::TIMESTAMP IS NULL OR sampled_at >= $since)
      AND ($until::TIMESTAMP IS NULL OR sampled_at < $until)
    ORDER BY sampled_at DESC LIMIT $limit)
ORDER BY sampled_at
"""


def alerts_overview(
    reader: Reader, *, limit: int = 100, rule: str | None = None, include_inactive: bool = False
) -> dict[str, list[dict[str, Any]]]:
    """``{"rules": [...], "events": [...]}`` for ``/api/v1/alerts``, newest events first.

    Each rule is its definition (targets redacted) plus ``state``, ``state_since``, ``value``,
    ``baseline_value``, ``samples``, ``examples``, ``last_evaluated_at``, ``notify_failures``.
    """
    out_rules = []
    for row in reader.rows(_RULES, {"inactive": include_inactive, "rule": rule}):
        definition = json.loads(row.pop("definition"))
        out_rules.append({**definition, **row, "examples": row["examples"] or []})
    events = reader.rows(_EVENTS, {"rule": rule, "limit": limit})
    for event in events:
        event["id"] = int(event["id"])
    return {"rules": out_rules, "events": events}


def alert_series(
    reader: Reader,
    rule: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 5000,
) -> list[dict[str, Any]]:
    """The rule's evaluated values over time, oldest first: ``[{"at", "value", "samples"}]``.

    Example:
        >>> alert_series(reader, "loop-rate")[-1]["value"]  # doctest: +SKIP
        0.42
    """
    return reader.rows(_SERIES, {"rule": rule, "since": since, "until": until, "limit": limit})
