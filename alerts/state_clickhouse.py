"""Rule state, transitions and metric samples in ClickHouse (loopsight's migrations 0004, 0007).

The same contract as :class:`loopsight.alerts.state.StateStore` on DuckDB, in ClickHouse's
terms: nothing is updated in place.

- ``alert_rules`` is a ReplacingMergeTree on ``updated_at``: every change inserts the rule's
  whole row, and reads take the newest (``FINAL``).
- ``alert_events`` rows are written once; the delivery outcome of a notification is a row
  of ``alert_deliveries`` (ReplacingMergeTree on ``at``, keyed by event id) that readers
  join, instead of a mutation per notification.
- old ``alert_samples`` go by a lightweight ``DELETE`` (ClickHouse 23.3+), as on DuckDB.

Event ids are made here (microseconds since the epoch << 8, plus a counter), so
:meth:`ClickHouseStateStore.save` can hand them to the notifier without reading back.

Example:
    >>> store = ClickHouseStateStore(writer.reader)  # doctest: +SKIP
    >>> store.sync_rules(rules)["loop-rate"].state  # doctest: +SKIP
    'ok'
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

from loopsight.alerts.evaluate import RuleState, Transition, Verdict
from loopsight.alerts.rules import Rule
from loopsight.alerts.state import SAMPLE_RETENTION
from loopsight.stores.clickhouse import ClickHouseConnection

_TS = pa.timestamp("us")
_RULES = pa.schema(
    [
        ("name", pa.string()),
        ("definition", pa.string()),
        ("active", pa.bool_()),
        ("state", pa.string()),
        ("state_since", _TS),
        ("pending_since", _TS),
        ("value", pa.float64()),
        ("baseline", pa.float64()),
        ("samples", pa.int64()),
        ("examples", pa.list_(pa.string())),
        ("last_evaluated_at", _TS),
        ("last_notified_at", _TS),
        ("notified_firing", pa.bool_()),
        ("updated_at", _TS),
    ]
)
_EVENTS = pa.schema(
    [
        ("id", pa.uint64()),
        ("rule", pa.string()),
        ("occurred_at", _TS),
        ("from_state", pa.string()),
        ("to_state", pa.string()),
        ("value", pa.float64()),
        ("threshold", pa.float64()),
        ("baseline", pa.float64()),
        ("samples", pa.int64()),
        ("examples", pa.list_(pa.string())),
        ("notify_status", pa.string()),
        ("notify_error", pa.string()),
    ]
)
_SAMPLES = pa.schema([("rule", pa.string()), ("sampled_at", _TS), ("value", pa.float64()), ("samples", pa.int64())])
_DELIVERIES = pa.schema([("event_id", pa.uint64()), ("status", pa.string()), ("error", pa.string()), ("at", _TS)])
_COLUMNS = ", ".join(_RULES.names[:-1])


def _table(schema: pa.Schema, records: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(records, schema=schema)


class _Clock:
    """Strictly increasing microsecond stamps: ReplacingMergeTree keeps the row with the newest."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()
        self._seq = itertools.count()

    def stamp(self) -> datetime:
        with self._lock:
            self._last = max(self._last + 1, time.time_ns() // 1000)
            return datetime(1970, 1, 1) + timedelta(microseconds=self._last)

    def event_id(self) -> int:
        return ((time.time_ns() // 1000) << 8) | (next(self._seq) & 0xFF)


class ClickHouseStateStore:
    """Reads and writes the alert tables on ClickHouse through connections from ``connect()``."""

    def __init__(self, connect: Callable[[], ClickHouseConnection]) -> None:
        self._connect = connect
        self._clock = _Clock()

    def _current(self, con: ClickHouseConnection) -> dict[str, dict[str, Any]]:
        found = con.execute(f"SELECT {_COLUMNS} FROM alert_rules FINAL")
        columns = [d[0] for d in found.description]
        return {row[0]: dict(zip(columns, row, strict=False)) for row in found.fetchall()}

    def sync_rules(self, rules: list[Rule]) -> dict[str, RuleState]:
        """Record the current rule definitions (others become inactive) and load their states."""
        con = self._connect()
        try:
            current = self._current(con)
            names = {r.name for r in rules}
            records = []
            for name, row in current.items():
                if row["active"] and name not in names:
                    records.append({**row, "active": False, "updated_at": self._clock.stamp()})
            for rule in rules:
                row = current.get(rule.name) or {"state": "ok", "examples": [], "notified_firing": False}
                records.append(
                    {
                        **row,
                        "name": rule.name,
                        "definition": json.dumps(rule.describe()),
                        "active": True,
                        "updated_at": self._clock.stamp(),
                    }
                )
            con.insert_arrow("alert_rules", _table(_RULES, records))
        finally:
            con.close()
        return {
            name: RuleState(
                row["state"],
                row.get("state_since"),
                row.get("pending_since"),
                row.get("last_notified_at"),
                bool(row["notified_firing"]),
            )
            for name, row in current.items()
            if name in names
        }

    def save(
        self, rule: Rule, state: RuleState, verdict: Verdict, transitions: list[Transition], now: datetime
    ) -> list[int]:
        """Persist one evaluation; returns the new event ids in order.

        The events are inserted before the rule's new state: a crash in between re-evaluates
        from the old state and may record a transition twice, but never loses one.
        """
        current = verdict.current
        ids = [self._clock.event_id() for _ in transitions]
        events = [
            {
                "id": event_id,
                "rule": t.rule,
                "occurred_at": t.at,
                "from_state": t.from_state,
                "to_state": t.to_state,
                "value": t.value,
                "threshold": t.threshold,
                "baseline": t.baseline,
                "samples": t.samples,
                "examples": list(t.examples or []),
                "notify_status": "queued" if t.notify else ("suppressed" if t.note == "cooldown" else "none"),
                "notify_error": t.note or None,
            }
            for event_id, t in zip(ids, transitions, strict=False)
        ]
        con = self._connect()
        try:
            con.insert_arrow("alert_events", _table(_EVENTS, events))
            con.insert_arrow(
                "alert_rules",
                _table(
                    _RULES,
                    [
                        {
                            "name": rule.name,
                            "definition": json.dumps(rule.describe()),
                            "active": True,
                            "state": state.state,
                            "state_since": state.state_since,
                            "pending_since": state.pending_since,
                            "value": current.value,
                            "baseline": verdict.baseline_value,
                            "samples": current.samples,
                            "examples": list(current.examples),
                            "last_evaluated_at": now,
                            "last_notified_at": state.last_notified_at,
                            "notified_firing": state.notified_firing,
                            "updated_at": self._clock.stamp(),
                        }
                    ],
                ),
            )
            con.insert_arrow(
                "alert_samples",
                _table(
                    _SAMPLES,
                    [{"rule": rule.name, "sampled_at": now, "value": current.value, "samples": current.samples}],
                ),
            )
        finally:
            con.close()
        return ids

    def set_notify_status(self, event_id: int, status: str, error: str | None = None) -> None:
        """Record how a notification went (``sent`` / ``failed`` / ``dropped``)."""
        con = self._connect()
        try:
            con.insert_arrow(
                "alert_deliveries",
                _table(
                    _DELIVERIES, [{"event_id": event_id, "status": status, "error": error, "at": self._clock.stamp()}]
                ),
            )
        finally:
            con.close()

    def prune(self, now: datetime) -> None:
        """Drop metric samples older than the retention (transitions are kept)."""
        con = self._connect()
        try:
            con.execute(
                "DELETE FROM alert_samples WHERE sampled_at < {before:DateTime64(6, 'UTC')}",
                {"before": now - SAMPLE_RETENTION},
            )
        finally:
            con.close()
