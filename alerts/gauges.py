"""The agent gauges of ``/metrics`` for a collector without alert rules.

With ``--rules`` the :class:`~loopsight.alerts.evaluator.Evaluator` computes them at every
evaluation. Without, :class:`AgentGauges` computes them with the same :func:`gauges` when
``/metrics`` is scraped, at most once every ``max_age_seconds``; a scrape in between gets
the last values, so frequent scrapes never add queries.

Example:
    >>> agent_gauges = AgentGauges(store.reader, max_age_seconds=30)  # doctest: +SKIP
    >>> agent_gauges.prometheus_lines()[:2]  # doctest: +SKIP
    ['# HELP loopsight_runs Runs started in the gauge window ...', '# TYPE loopsight_runs gauge']
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from loopsight.alerts.evaluator import utcnow
from loopsight.alerts.prometheus import prometheus_lines
from loopsight.analytics.metrics import GAUGE_WINDOW_SECONDS, Gauge, gauges, store_clock
from loopsight.stores import STORE_ERRORS

log = logging.getLogger("loopsight.alerts")


class AgentGauges:
    """:func:`gauges` over the last ``window_seconds``, recomputed on demand once older than ``max_age_seconds``."""

    def __init__(
        self,
        reader_factory: Callable[[], Any],
        max_age_seconds: float = 30.0,
        window_seconds: float = GAUGE_WINDOW_SECONDS,
        *,
        clock: Callable[[], datetime] = utcnow,
        monotonic: Callable[[], float] = time.monotonic,
        totals_since: datetime | None = None,
    ) -> None:
        """``totals_since``: where the cost counters start, by the store's clock (default: its
        clock at the first computation)."""
        self.reader_factory = reader_factory
        self.max_age_seconds = max_age_seconds
        self.window = timedelta(seconds=window_seconds)
        self.clock = clock
        self.totals_since = totals_since  # the cost counters count the model calls received since
        self.monotonic = monotonic
        self._gauges: list[Gauge] = []
        self._computed_at: float | None = None
        self._lock = threading.Lock()

    def current(self) -> list[Gauge]:
        """The gauges, recomputed first when due (concurrent scrapes wait for one computation)."""
        with self._lock:
            now = self.monotonic()
            if self._computed_at is None or now - self._computed_at >= self.max_age_seconds:
                self._computed_at = now  # a failing store is retried at the same pace, not on every scrape
                self._refresh()
            return list(self._gauges)

    def _refresh(self) -> None:
        until = self.clock()
        try:
            con = self.reader_factory()
            try:
                if self.totals_since is None:
                    self.totals_since = store_clock(con)
                self._gauges = gauges(con, until - self.window, until, totals_since=self.totals_since)
            finally:
                con.close()
        except STORE_ERRORS as exc:  # as the evaluator: keep the previous values
            log.error("agent gauges failed: %s", exc)

    def prometheus_lines(self) -> list[str]:
        """Prometheus text lines for ``/metrics``."""
        return prometheus_lines(self.current())
