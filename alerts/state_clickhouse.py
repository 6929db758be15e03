"""How the alert tables are written on ClickHouse (loopsight's migrations 0004, 0007): nothing in place.

:class:`loopsight.alerts.state.StateStore` builds the rows; this writes them in ClickHouse's terms.

- ``alert_rules`` is a ReplacingMergeTree on ``updated_at``: every change inserts the rule's
  whole row, and reads take the newest (the view ``alert_rules_current``, ``FINAL``).
- ``alert_events`` rows are written once; the delivery outcome of a notification is a row
  of ``alert_deliveries`` (ReplacingMergeTree on ``at``, keyed by event id) that the view
  ``alert_events_current`` joins, instead of a mutation per notification.
- old ``alert_samples`` go by a lightweight ``DELETE`` (ClickHouse 23.3+), as on DuckDB.

Event ids are made here (the evaluator's strictly increasing microseconds since the epoch:
below 2**53, so exact in JSON), so :meth:`StateStore.save` can hand them to the notifier
without reading back.

Example:
    >>> StateStore(writer.reader, ClickHouseTables()).sync_rules(rules)["loop-rate"].state  # doctest: +SKIP
    'ok'
"""

from __future__ import annotations

import contextlib
import threading
import time
from datetime import datetime, timedelta

import pyarrow as pa

from loopsight.stores.clickhouse import ClickHouseConnection

_TS = pa.timestamp("us")
_DELIVERIES = pa.schema([("event_id", pa.uint64()), ("status", pa.string()), ("error", pa.string()), ("at", _TS)])


class ClickHouseTables:
    """The alert tables on ClickHouse: rows appended, the newest of a key wins."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def _micros(self) -> int:
        """Strictly increasing microseconds since the epoch: ReplacingMergeTree keeps the row with the newest."""
        with self._lock:
            self._last = max(self._last + 1, time.time_ns() // 1000)
            return self._last

    def _stamp(self) -> datetime:
        return datetime(1970, 1, 1) + timedelta(microseconds=self._micros())

    def transaction(self, con: ClickHouseConnection) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    def put(self, con: ClickHouseConnection, table: str, rows: pa.Table) -> None:
        if table == "alert_rules":
            rows = rows.append_column("updated_at", pa.array([self._stamp() for _ in range(rows.num_rows)], _TS))
        con.insert_arrow(table, rows)

    def event_ids(self, con: ClickHouseConnection, count: int) -> list[int]:
        return [self._micros() for _ in range(count)]

    def delivered(self, con: ClickHouseConnection, event_id: int, status: str, error: str | None) -> None:
        row = {"event_id": event_id, "status": status, "error": error, "at": self._stamp()}
        con.insert_arrow("alert_deliveries", pa.Table.from_pylist([row], schema=_DELIVERIES))

    def prune(self, con: ClickHouseConnection, before: datetime) -> None:
        con.execute("DELETE FROM alert_samples WHERE sampled_at < {before:DateTime64(6, 'UTC')}", {"before": before})
