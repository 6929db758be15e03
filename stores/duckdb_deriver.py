"""The DuckDB store's deriver: when derive passes run, and what happens when one fails.

Each pass derives every pending trace (``derive_pending``, filled by the writer's commits) at
once, on its own thread and connection, in one transaction that also deletes the pending rows
it covered (the rows its snapshot holds: commits made while it runs stay pending for the next
pass). What a pass computes is :mod:`loopsight.stores.derive`. A trace's spans are read from
``run_skew`` before the earliest of its new spans or of its known runs (a run starts before its
children; the margin is for clocks of other services), never more than ``run_lookback`` before
its new spans, so a pass reads the spans of the last few minutes however many are stored.

A pass runs ``derive_interval`` seconds after the first commit it has to cover once
``derive_rows`` spans wait for it, else ``derive_max_wait`` seconds after (busy or idle), when a
reader asks for it, on close, and on open if a crash left pending rows; a failed pass is
retried after a wait that doubles up to ``max_derive_retry``. One pass costs about as much for
one commit's traces as for many (~150-200 ms of CPU, mostly planning), so passes are spaced
rather than run whenever the writer is idle. Unless a reader asks, a pass also starts at least
``derive_interval`` after the last one ended: a commit cannot checkpoint the write-ahead log
while a pass's transaction is open, so back-to-back passes under a flood would let the log
grow for as long as the flood lasts.

Commits are numbered; a pass covers every commit up to the number it read before its snapshot.
:meth:`Deriver.wait` blocks a reader until a pass covers the commits acknowledged when it
asked ("current once read"). A pass that fails on the data (an overflow, a bad cast) derives
the pending traces in parts (:mod:`loopsight.stores.isolation`, as the ClickHouse store does), so
one bad trace never holds back every later run.

Example:
    >>> deriver = Deriver(con, WriterStats())  # doctest: +SKIP
    >>> deriver.committed(rows=12); deriver.wait()  # doctest: +SKIP
    True
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from concurrent.futures import Future
from datetime import timedelta

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from loopsight.prices import PriceBook
from loopsight.stores.derive import PENDING_SQL, derive_traces
from loopsight.stores.isolation import DATA_ERRORS, derive_in_parts
from loopsight.stores.protocol import WriterStats

log = logging.getLogger("loopsight.collector")


def rollback(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back, ignoring a connection with no transaction open."""
    with contextlib.suppress(duckdb.Error):
        con.rollback()


class Deriver:
    """The deriver thread of one DuckDB file, told of commits by the writer."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        stats: WriterStats,
        *,
        run_lookback: timedelta = timedelta(hours=6),
        run_skew: timedelta = timedelta(minutes=5),
        derive_interval: float = 1.0,
        derive_rows: int = 5_000,
        derive_max_wait: float = 5.0,
        max_derive_retry: float = 60.0,
        barrier_timeout: float = 5.0,
        prices: PriceBook | None = None,
    ) -> None:
        self._con = con
        self.stats = stats
        self.prices = prices  # prices the new (provider, model) pairs a pass meets
        micro = timedelta(microseconds=1)
        self._params = {"skew_us": run_skew // micro, "lookback_us": run_lookback // micro}
        self._interval = derive_interval
        self._rows = derive_rows
        self._max_wait = derive_max_wait
        self._max_retry = max_derive_retry
        self._barrier_timeout = barrier_timeout
        self._retry = 0.0  # after failed passes: the growing wait before the next try
        self._retry_due = 0.0  # no pass before this while retrying
        self._last_pass_end = 0.0  # unless a reader asks, no pass before derive_interval after this
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)
        self._committed = 0
        self._committed_rows = 0
        self._derived = 0
        self._derived_rows = 0
        self._commit_times: deque[tuple[int, float]] = deque()  # (number, when) of commits not derived yet
        self._barriers: list[tuple[int, Future[None]]] = []
        self._writer_done = False
        self._thread: threading.Thread | None = None

    def recover(self) -> None:
        """Derive what a crash left pending, before the threads start (rows left count as one commit)."""
        # fetchall: a result left half read keeps its transaction open, and while it is open the
        # passes' updates of stored spans are never cleaned up, so no checkpoint could ever run.
        if not self._con.execute("SELECT count(*) FROM derive_pending").fetchall()[0][0]:
            return
        log.info("deriving the traces left pending by the last run")
        recovery = self._con.cursor()
        self._committed = 1
        self._commit_times.append((1, time.monotonic()))
        self._derive(recovery)
        recovery.close()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="loopsight-deriver", daemon=True)
        self._thread.start()

    @property
    def pending_commits(self) -> int:
        """Commits the next pass will derive (0 when the tables are current)."""
        return self._committed - self._derived

    def committed(self, rows: int) -> None:
        """A commit stored ``rows`` spans (called before its requests are answered)."""
        with self._lock:
            self._committed += 1
            self._committed_rows += rows
            self._commit_times.append((self._committed, time.monotonic()))
            self._wakeup.notify()

    def wait(self) -> bool:
        """Wait until the derived tables cover every commit acknowledged so far.

        Returns ``False`` if the pass did not finish within ``barrier_timeout`` seconds
        (``True`` also after a pass that failed: the tables are then read as they are).
        Costs nothing when no commit is pending.
        """
        if threading.current_thread() is self._thread:
            return True
        with self._lock:
            alive = self._thread is not None and self._thread.is_alive()
            if self._derived >= self._committed or (self._writer_done and not alive):
                return True
            barrier: Future[None] = Future()
            self._barriers.append((self._committed, barrier))
            self._wakeup.notify()
        try:
            barrier.result(timeout=self._barrier_timeout)
        except TimeoutError:
            log.warning("derived tables not current after %.1f s; reading them as they are", self._barrier_timeout)
            return False
        return True

    def finish(self) -> None:
        """The writer committed its last batch: run the last pass, stop, release every reader."""
        with self._lock:
            self._writer_done = True
            self._wakeup.notify()
        if self._thread is not None:
            self._thread.join()
        self._release_barriers(everything=True)  # readers that asked while the last pass ran

    def _run(self) -> None:
        con = self._con.cursor()
        last = False
        while not last:
            with self._lock:
                while not self._writer_done:
                    wait = self._due() - time.monotonic() if self._derived < self._committed else None
                    if wait is not None and (wait <= 0 or self._barriers):  # a reader asks: even while retrying
                        break
                    self._wakeup.wait(wait)
                last = self._writer_done  # then the writer has committed its last batch
            try:
                self._derive(con)
            except Exception:  # never end the thread: readers would wait out every barrier
                log.exception("derive pass failed")
                self._failed()
        con.close()

    def _due(self) -> float:
        """When the pending commits' pass runs unless a reader asks first (lock held)."""
        first = self._commit_times[0][1]
        rows = self._committed_rows - self._derived_rows
        # A pass costs about the same for a few spans as for thousands: under a trickle wait
        # longer; under a flood keep passes short (readers wait for them).
        wait = self._interval if rows >= self._rows else self._max_wait
        return max(first + wait, self._retry_due, self._last_pass_end + self._interval)

    def _derive(self, con: duckdb.DuckDBPyConnection) -> None:
        """Derive every pending trace in one transaction, then release the readers waiting for
        it (also when it failed: they read what is there)."""
        with self._lock:
            covered, covered_rows = self._committed, self._committed_rows
        if covered <= self._derived:
            self._release_barriers()
            return
        started = time.perf_counter()
        try:
            con.begin()  # after reading ``covered``: its snapshot holds those commits
            pending = con.sql(PENDING_SQL, params=self._params).to_arrow_table()
            if pending.num_rows:
                self._derive_pending(con, pending)
                con.execute("DELETE FROM derive_pending")
            con.commit()
        except DATA_ERRORS as exc:
            # Deterministic: retried as it is, one bad trace would hold back every later one.
            rollback(con)
            self.stats.failed_derives += 1
            log.error("deriving the per-run tables failed: %s; deriving the pending traces in parts", exc)
            if self._isolate(con, exc):
                self._passed(covered, covered_rows, started)
            else:
                self._failed()
        except Exception as exc:  # the rows stay pending; the next pass tries again
            rollback(con)
            self.stats.failed_derives += 1
            log.error("deriving the per-run tables failed: %s", exc)
            self._failed()
        else:
            self._passed(covered, covered_rows, started)
        finally:
            with contextlib.suppress(duckdb.Error):
                con.unregister("touched")

    def _derive_pending(self, con: duckdb.DuckDBPyConnection, pending: pa.Table) -> None:
        con.register("touched", pending.select(["TraceId"]))
        derive_traces(con, pc.min(pending.column("since")).as_py(), prices=self.prices)

    def _failed(self) -> None:
        with self._lock:
            # Not after every commit while it keeps failing, nor every interval when idle.
            self._retry = min(max(2 * self._retry, self._interval), self._max_retry)
            self._retry_due = time.monotonic() + self._retry
        self._release_barriers(everything=True)

    def _passed(self, covered: int, covered_rows: int, started: float) -> None:
        with self._lock:
            self._derived, self._derived_rows = covered, covered_rows
            while self._commit_times and self._commit_times[0][0] <= covered:
                self._commit_times.popleft()
            self._retry = self._retry_due = 0.0
            self._last_pass_end = time.monotonic()
        self.stats.record_derive(time.perf_counter() - started)
        self._release_barriers()

    def _isolate(self, con: duckdb.DuckDBPyConnection, failed: Exception) -> bool:
        """Derive the pending traces, which failed together with ``failed``, in parts
        (:func:`~loopsight.stores.isolation.derive_in_parts`);
        ``False``, leaving the rest pending, when something other than the data failed or the
        parts did not settle it."""

        def set_aside(trace_id: str) -> None:
            con.execute("DELETE FROM derive_pending WHERE trace_id = $t", {"t": trace_id})

        try:
            traces = [r[0] for r in con.execute("SELECT DISTINCT trace_id FROM derive_pending").fetchall()]
            aside = derive_in_parts(traces, lambda part: self._derive_part(con, part), set_aside, failed)
        except Exception as exc:  # not the data: leave the rest pending for the next pass
            log.error("deriving the per-run tables failed: %s", exc)
            return False
        if aside is None:
            return False
        self.stats.set_aside_traces += len(aside)
        return True

    def _derive_part(self, con: duckdb.DuckDBPyConnection, traces: list[str]) -> None:
        """Derive the pending traces ``traces`` in one transaction (rolled back when it fails)."""
        try:
            con.begin()
            # Read in the part's own snapshot: a run span committed since started first.
            con.register("part_traces", pa.table({"TraceId": traces}))
            pending = con.sql(
                f'SELECT * FROM ({PENDING_SQL}) WHERE "TraceId" IN (SELECT "TraceId" FROM part_traces)',
                params=self._params,
            ).to_arrow_table()
            if pending.num_rows:
                self._derive_pending(con, pending)
                con.execute('DELETE FROM derive_pending WHERE trace_id IN (SELECT "TraceId" FROM touched)')
            con.commit()
        except Exception:
            rollback(con)
            raise
        finally:
            con.unregister("part_traces")

    def _release_barriers(self, everything: bool = False) -> None:
        with self._lock:
            done = [b for b in self._barriers if everything or b[0] <= self._derived]
            self._barriers = [b for b in self._barriers if not (everything or b[0] <= self._derived)]
        for _, barrier in done:
            barrier.set_result(None)
