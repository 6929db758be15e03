"""Rule state, transitions and metric samples in the store (DuckDB migration 0002, ClickHouse 0004, 0007).

One :class:`StateStore` for both engines: it reads each rule's state from the view
``alert_rules_current`` (both engines hold it) and builds every row it writes once; only how
the rows reach the tables differs, a :class:`Tables` of the engine's (DuckDB: :class:`DuckDBTables`,
rows upserted in one transaction; ClickHouse: :class:`loopsight.alerts.state_clickhouse.ClickHouseTables`,
nothing updated in place).

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
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any, Protocol

import duckdb
import pyarrow as pa

from loopsight.alerts.evaluate import RuleState, Transition, Verdict
from loopsight.alerts.rules import Rule
from loopsight.model import arrow_schema
from loopsight.stores import dialect

log = logging.getLogger("loopsight.alerts")

SAMPLE_RETENTION = timedelta(days=7)

# The rows written, as loopsight.model has the tables (ClickHouse adds its version column).
RULES = arrow_schema("alert_rules")
EVENTS = arrow_schema("alert_events")
SAMPLES = arrow_schema("alert_samples")
_CURRENT = f"SELECT {', '.join(RULES.names)} FROM alert_rules_current"
_UNDELIVERED = """
SELECT id, rule, occurred_at, to_state, value, baseline, samples, coalesce(examples, []) AS examples, notify_error
FROM alert_events_current
WHERE notify_status = 'queued' AND to_state IN ('firing', 'resolved') AND occurred_at >= $since::TIMESTAMP
ORDER BY occurred_at, id
"""


class Tables(Protocol):
    """How one engine writes the alert tables (rows of :data:`RULES`, :data:`EVENTS`, :data:`SAMPLES`)."""

    def transaction(self, con: Any) -> contextlib.AbstractContextManager[None]:
        """The writes of one call, together where the engine has transactions."""
        ...

    def put(self, con: Any, table: str, rows: pa.Table) -> None:
        """Write ``rows``; a rule's row replaces the one of the same name."""
        ...

    def event_ids(self, con: Any, count: int) -> list[int]:
        """``count`` new ``alert_events`` ids, increasing."""
        ...

    def delivered(self, con: Any, event_id: int, status: str, error: str | None) -> None:
        """Record how the notification of event ``event_id`` went."""
        ...

    def prune(self, con: Any, before: datetime) -> None:
        """Delete the ``alert_samples`` taken before ``before``."""
        ...


class DuckDBTables:
    """The alert tables in the DuckDB file: rows upserted, each call one transaction."""

    @contextlib.contextmanager
    def transaction(self, con: duckdb.DuckDBPyConnection) -> Iterator[None]:
        con.begin()
        try:
            yield
        except Exception:
            with contextlib.suppress(duckdb.Error):
                con.rollback()
            raise
        con.commit()

    def put(self, con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table) -> None:
        how = "INSERT OR REPLACE" if table == "alert_rules" else "INSERT"
        con.register("alert_rows", rows)
        try:
            con.execute(f"{how} INTO {table} BY NAME SELECT * FROM alert_rows")
        finally:
            con.unregister("alert_rows")

    def event_ids(self, con: duckdb.DuckDBPyConnection, count: int) -> list[int]:
        found = con.execute("SELECT nextval('alert_event_id') FROM range($n)", {"n": count}).fetchall()
        return sorted(int(row[0]) for row in found)

    def delivered(self, con: duckdb.DuckDBPyConnection, event_id: int, status: str, error: str | None) -> None:
        con.execute(
            "UPDATE alert_events SET notify_status = $status, notify_error = $error WHERE id = $id",
            {"status": status, "error": error, "id": event_id},
        )

    def prune(self, con: duckdb.DuckDBPyConnection, before: datetime) -> None:
        con.execute("DELETE FROM alert_samples WHERE sampled_at < $before", {"before": before})


class StateStore:
    """Reads and writes the alert tables through connections from ``connect()``.

    ``tables``: how the engine writes them (default: the one for ``connect()``'s dialect).
    """

    def __init__(self, connect: Callable[[], Any], tables: Tables | None = None) -> None:
        self._connect = connect
        self._tables = tables or _tables_for(connect)

    @contextlib.contextmanager
    def _session(self) -> Iterator[Any]:
        con = self._connect()
        try:
            with self._tables.transaction(con):
                yield con
        finally:
            con.close()

    def sync_rules(self, rules: list[Rule]) -> dict[str, RuleState]:
        """Record the current rule definitions (others become inactive) and load their states."""
        names = {r.name for r in rules}
        with self._session() as con:
            found = con.execute(_CURRENT)
            current = {row[0]: dict(zip(RULES.names, row, strict=True)) for row in found.fetchall()}
            records = [{**row, "active": False} for name, row in current.items() if row["active"] and name not in names]
            for rule in rules:
                row = current.get(rule.name) or {"state": "ok", "examples": [], "notified_firing": False}
                records.append({**row, "name": rule.name, "definition": json.dumps(rule.describe()), "active": True})
            self._tables.put(con, "alert_rules", pa.Table.from_pylist(records, schema=RULES))
        return {
            row["name"]: RuleState(
                row["state"],
                row.get("state_since"),
                row.get("pending_since"),
                row.get("last_notified_at"),
                bool(row["notified_firing"]),
            )
            for row in records
            if row["name"] in names
        }

    def save(
        self, rule: Rule, state: RuleState, verdict: Verdict, transitions: list[Transition], now: datetime
    ) -> list[int]:
        """Persist one evaluation; returns the new event ids in order.

        The events are written before the rule's new state: where the engine has no
        transaction, a crash in between re-evaluates from the old state and may record a
        transition twice, but never loses one.
        """
        current = verdict.current
        rule_row = {
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
        }
        sample = {"rule": rule.name, "sampled_at": now, "value": current.value, "samples": current.samples}
        with self._session() as con:
            ids = self._tables.event_ids(con, len(transitions)) if transitions else []
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
                for event_id, t in zip(ids, transitions, strict=True)
            ]
            if events:
                self._tables.put(con, "alert_events", pa.Table.from_pylist(events, schema=EVENTS))
            self._tables.put(con, "alert_rules", pa.Table.from_pylist([rule_row], schema=RULES))
            self._tables.put(con, "alert_samples", pa.Table.from_pylist([sample], schema=SAMPLES))
        return ids

    def undelivered(self, since: datetime) -> list[dict[str, Any]]:
        """The notifications queued since ``since`` that no delivery settled (the process stopped
        first), oldest first: ``id``, ``rule``, ``occurred_at``, ``to_state``, ``value``,
        ``baseline``, ``samples``, ``examples``, ``notify_error`` (the transition's note)."""
        con = self._connect()
        try:
            rows: list[dict[str, Any]] = con.rows(_UNDELIVERED, {"since": since})
        finally:
            con.close()
        for row in rows:  # the reader answers in JSON's terms: times as ISO strings
            row["occurred_at"] = datetime.fromisoformat(row["occurred_at"].removesuffix("Z"))
        return rows

    def set_notify_status(self, event_id: int, status: str, error: str | None = None) -> None:
        """Record how a notification went (``sent`` / ``failed`` / ``dropped``)."""
        with self._session() as con:
            self._tables.delivered(con, event_id, status, error)

    def prune(self, now: datetime) -> None:
        """Drop metric samples older than the retention (transitions are kept)."""
        with self._session() as con:
            self._tables.prune(con, now - SAMPLE_RETENTION)


def _tables_for(connect: Callable[[], Any]) -> Tables:
    con = connect()
    try:
        kind = dialect(con)
    finally:
        con.close()
    if kind != "clickhouse":
        return DuckDBTables()
    from loopsight.alerts.state_clickhouse import ClickHouseTables

    return ClickHouseTables()


def state_store(connect: Callable[[], Any]) -> StateStore:
    """The state store for the connections ``connect()`` returns, DuckDB or ClickHouse.

    Example:
        >>> state_store(writer.reader).sync_rules(rules)["loop-rate"].state  # doctest: +SKIP
        'ok'
    """
    return StateStore(connect)
