"""``--retention 30d``: delete spans older than that, in the background, in small chunks.

Each chunk is one short transaction on the writer thread between ingest commits, so a
large backlog of old spans never holds the writer for long. A chunk whose pruning of derived
rows meets a concurrent derive pass deleting the same rows (a pass whose look-back reaches
past the cutoff) fails and is tried again at the next interval.

Example:
    >>> parse_retention("30d").days
    30
    >>> parse_retention("90m").total_seconds()
    5400.0
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from loopsight.config import parse_duration

log = logging.getLogger("loopsight.collector.retention")


SHORTEST_RETENTION = 3600.0
"""Seconds: a shorter retention would delete the spans of runs still in flight, just acknowledged."""


def parse_retention(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``2w`` or a combination like ``1d12h`` (:func:`loopsight.config.parse_duration`),
    at least an hour (:data:`SHORTEST_RETENTION`)."""
    seconds = parse_duration(text, "retention")
    if seconds < SHORTEST_RETENTION:
        raise ValueError(f"retention {text!r} must be at least 1h: a shorter one deletes runs still in flight")
    return timedelta(seconds=seconds)


class Retention:
    """Every ``interval`` seconds, delete spans that started before now - ``keep``."""

    def __init__(
        self, store: Any, keep: timedelta, *, interval: float = 300.0, chunk: int = 50_000, first_delay: float = 1.0
    ) -> None:
        self.store = store
        self.keep = keep
        self.interval = interval
        self.chunk = chunk
        self.first_delay = first_delay
        self.deleted = 0
        self.passes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="loopsight-retention", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def run_once(self) -> int:
        """Delete everything older than the cutoff, chunk by chunk; returns spans deleted."""
        cutoff = datetime.now(UTC).replace(tzinfo=None) - self.keep
        total = 0
        while not self._stop.is_set():
            future = self.store.run_job(lambda con: self.store.delete_before(con, cutoff, self.chunk))
            deleted = future.result()
            total += deleted
            self.deleted += deleted
            if deleted < self.chunk:
                break
        self.passes += 1
        if total:
            log.info("retention deleted %d spans older than %s", total, cutoff.isoformat(timespec="seconds"))
        return total

    def _run(self) -> None:
        delay = self.first_delay
        while not self._stop.wait(delay):
            started = time.monotonic()
            try:
                self.run_once()
            except Exception as exc:  # keep trying at the next interval
                log.error("retention pass failed: %s", exc)
            delay = max(self.interval - (time.monotonic() - started), 0.0)

    def prometheus_lines(self) -> list[str]:
        return [
            "# HELP loopsight_retention_deleted_spans_total Spans deleted by retention.",
            "# TYPE loopsight_retention_deleted_spans_total counter",
            f"loopsight_retention_deleted_spans_total {self.deleted}",
        ]
