"""Rule state, transitions and metric samples in the DuckDB file (tables of migration 0002).

On a ClickHouse store the same functions run :mod:`loopsight.alerts.state_clickhouse`;
:func:`state_store` picks the store class for a connection factory.

The evaluator loads each rule's state here at start, so a restart neither forgets a
``pending`` timer nor re-sends a ``firing`` notification. The read functions
(:func:`alerts_overview`, :func:`alert_series`) serve ``/api/v1/alerts``.

Example:
    >>> store = StateStore(store.reader)  # doctest: +SKIP
    >>> states = store.sync_rules(rules, now)  # doctest: +SKIP
    >>> states["loop-rate"].state  # doctest: +SKIP
    'firing'
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import duckdb

from loopsight.alerts.evaluate import RuleState, Transition, Verdict
from loopsight.alerts.rules import Rule
from loopsight.stores import dialect

log = logging.getLogger("loopsight.alerts")

SAMPLE_RETENTION = timedelta(days=7)


class StateStore:
    """Reads and writes the alert tables through connections from ``connect()``."""

    def __init__(self, connect: Callable[[], duckdb.DuckDBPyConnection]) -> None:
        self._connect = connect

    def sync_rules(self, rules: list[Rule]) -> dict[str, RuleState]:
        """Record the current rule definitions (others become inactive) and load their states."""
        con = self._connect()
        try:
            con.begin()
            con.execute(
                "UPDATE alert_rules SET active = false WHERE active AND NOT list_contains($names, name)",
                {"names": [r.name for r in rules]},
            )
            for rule in rules:
                con.execute(
                    "INSERT INTO alert_rules (name, definition, active) VALUES ($name, $definition, true) "
                    "ON CONFLICT (name) DO UPDATE SET definition = excluded.definition, active = true",
                    {"name": rule.name, "definition": json.dumps(rule.describe())},
                )
            con.commit()
            found = con.execute(
                "SELECT name, state, state_since, pending_since, last_notified_at, notified_firing "
                "FROM alert_rules WHERE list_contains($names, name)",
                {"names": [r.name for r in rules]},
            ).fetchall()
        finally:
            con.close()
        return {
            name: RuleState(state, since, pending, notified, bool(flag))
            for name, state, since, pending, notified, flag in found
        }

    def save(
        self, rule: Rule, state: RuleState, verdict: Verdict, transitions: list[Transition], now: datetime
    ) -> list[int]:
        """Persist one evaluation in one transaction; returns the new event ids in order."""
        current = verdict.current
        con = self._connect()
        ids: list[int] = []
        try:
            con.begin()
            con.execute(
                "UPDATE alert_rules SET state = $state, state_since = $state_since, pending_since = $pending_since, "
                "last_notified_at = $last_notified_at, notified_firing = $notified_firing, value = $value, "
                "baseline = $baseline, samples = $samples, examples = $examples, last_evaluated_at = $now "
                "WHERE name = $name",
                {
                    "state": state.state,
                    "state_since": state.state_since,
                    "pending_since": state.pending_since,
                    "last_notified_at": state.last_notified_at,
                    "notified_firing": state.notified_firing,
                    "value": current.value,
                    "baseline": verdict.baseline_value,
                    "samples": current.samples,
                    "examples": list(current.examples),
                    "now": now,
                    "name": rule.name,
                },
            )
            for t in transitions:
                status = "queued" if t.notify else ("suppressed" if t.note == "cooldown" else "none")
                event_id = con.execute(
                    "INSERT INTO alert_events (rule, occurred_at, from_state, to_state, value, threshold, baseline, "
                    "samples, examples, notify_status, notify_error) VALUES ($rule, $at, $from_state, $to_state, "
                    "$value, $threshold, $baseline, $samples, $examples, $status, $note) RETURNING id",
                    {
                        "rule": t.rule,
                        "at": t.at,
                        "from_state": t.from_state,
                        "to_state": t.to_state,
                        "value": t.value,
                        "threshold": t.threshold,
                        "baseline": t.baseline,
                        "samples": t.samples,
                        "examples": t.examples,
                        "status": status,
                        "note": t.note or None,
                    },
                ).fetchall()[0][0]
                ids.append(int(event_id))
            con.execute(
                "INSERT INTO alert_samples (rule, sampled_at, value, samples) VALUES ($rule, $at, $value, $samples)",
                {"rule": rule.name, "at": now, "value": current.value, "samples": current.samples},
            )
            con.commit()
        except Exception:
            with contextlib.suppress(duckdb.Error):
                con.rollback()
            raise
        finally:
            con.close()
        return ids

    def set_notify_status(self, event_id: int, status: str, error: str | None = None) -> None:
        """Record how a notification went (``sent`` / ``failed`` / ``dropped``)."""
        con = self._connect()
        try:
            con.execute(
                "UPDATE alert_events SET notify_status = $status, notify_error = $error WHERE id = $id",
                {"status": status, "error": error, "id": event_id},
            )
        finally:
            con.close()

    def prune(self, now: datetime) -> None:
        """Drop metric samples older than the retention (transitions are kept)."""
        con = self._connect()
        try:
            con.execute("DELETE FROM alert_samples WHERE sampled_at < $before", {"before": now - SAMPLE_RETENTION})
        finally:
            con.close()


def state_store(connect: Callable[[], Any]) -> Any:
    """The state store for the connections ``connect()`` returns: DuckDB or ClickHouse.

    Example:
        >>> state_store(writer.reader)  # doctest: +SKIP
        <loopsight.alerts.state_clickhouse.ClickHouseStateStore object at ...>
    """
    con = connect()
    try:
        kind = dialect(con)
    finally:
        con.close()
    if kind != "clickhouse":
        return StateStore(connect)
    from loopsight.alerts.state_clickhouse import ClickHouseStateStore

    return ClickHouseStateStore(connect)
