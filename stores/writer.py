"""The write queue both stores' writer threads take from: batches (bounded) and jobs between them.

Requests hand Arrow tables to :meth:`WriteQueue.submit`, which refuses them with
:class:`~loopsight.stores.protocol.QueueFull` (answered 503 with Retry-After) while too many
batches or spans wait. The store's one writer thread calls :meth:`WriteQueue.take`: a
maintenance :class:`Job`, :data:`STOP`, or every batch queued up to ``max_batch_rows`` spans in
the order they came (one group commit), which :func:`commit` stores, counts and answers. The
DuckDB store (:mod:`loopsight.stores.duckdb_store`) and the ClickHouse store
(:mod:`loopsight.stores.clickhouse_store`) differ only in how a commit stores its spans.

Example:
    >>> writes = WriteQueue(max_queue=8, max_batch_rows=1000)
    >>> future = writes.submit(pa.table({"x": [1, 2]}), Batch)
    >>> [b.table.num_rows for b in writes.take()], writes.depth
    ([2], 0)
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import pyarrow as pa

from loopsight.stores.protocol import QueueFull, StoreError, WriterStats

log = logging.getLogger("loopsight.collector")


@dataclass
class Batch:
    """A submitted batch: its spans and the future its request waits on."""

    table: pa.Table
    future: Future[int] = field(default_factory=Future)


@dataclass
class Job:
    """Maintenance ``work(connection)`` for the writer's thread, between commits."""

    work: Callable[[Any], Any]
    future: Future[Any] = field(default_factory=Future)


class _Stop:
    """The mark :meth:`WriteQueue.close` queues after everything submitted before it."""


STOP = _Stop()


class _Queued(Protocol):
    table: pa.Table
    future: Future[int]


B = TypeVar("B", bound=_Queued)


class WriteQueue(Generic[B]):
    """Batches and jobs waiting for one writer thread (``max_queue_rows`` None: no bound on spans)."""

    def __init__(self, *, max_queue: int, max_batch_rows: int, max_queue_rows: int | None = None) -> None:
        self._queue: queue.Queue[B | Job | _Stop] = queue.Queue()
        self._max_queue = max_queue
        self._max_queue_rows = max_queue_rows
        self._max_batch_rows = max_batch_rows
        self._held: Job | _Stop | None = None  # met while gathering batches: the next take's
        self._batches = 0
        self._rows = 0
        self._lock = threading.Lock()
        self.closed = False

    @property
    def depth(self) -> int:
        """Batches waiting for the writer."""
        return self._batches

    @property
    def rows(self) -> int:
        """Spans waiting for the writer."""
        return self._rows

    def submit(self, table: pa.Table, make: Callable[[pa.Table], B]) -> Future[int]:
        """Queue ``make(table)`` (made on the caller's thread); its future resolves once stored.

        Raises :class:`QueueFull` when the queue holds too many batches or spans, or is closed.
        """
        with self._lock:
            if self.closed:
                raise QueueFull("the store is shutting down")
            if self._batches >= self._max_queue or (
                self._max_queue_rows is not None and self._rows and self._rows + table.num_rows > self._max_queue_rows
            ):
                raise QueueFull(f"write queue is full ({self._batches} batches, {self._rows} spans waiting)")
            self._batches += 1
            self._rows += table.num_rows
        batch = make(table)
        with self._lock:  # queued under the lock: close() puts its stop mark under it, so none lands after it
            if not self.closed:
                self._queue.put(batch)
                return batch.future
            self._batches -= 1
            self._rows -= table.num_rows
        raise QueueFull("the store is shutting down")

    def run_job(self, work: Callable[[Any], Any]) -> Future[Any]:
        """Queue ``work(connection)`` for the writer's thread; its future has the result."""
        job = Job(work)
        with self._lock:
            if not self.closed:
                self._queue.put(job)
                return job.future
        job.future.set_exception(StoreError("the store is closed"))
        return job.future

    def close(self) -> bool:
        """Take nothing more: the writer meets :data:`STOP` after what is queued (False: closed already)."""
        with self._lock:
            if self.closed:
                return False
            self.closed = True
            self._queue.put(STOP)
        return True

    def take(self, timeout: float | None = None) -> list[B] | Job | _Stop | None:
        """The next work: a job, :data:`STOP`, or the batches queued up to ``max_batch_rows``
        spans; None when nothing came within ``timeout`` seconds (None: wait)."""
        first: B | Job | _Stop
        if self._held is not None:
            first, self._held = self._held, None
        else:
            try:
                first = self._queue.get(timeout=timeout)
            except queue.Empty:
                return None
        if isinstance(first, (Job, _Stop)):
            return first
        batches, rows = [first], first.table.num_rows
        while rows < self._max_batch_rows:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, (Job, _Stop)):
                self._held = item
                break
            batches.append(item)
            rows += item.table.num_rows
        with self._lock:
            self._batches -= len(batches)
            self._rows -= rows
        return batches


def commit(
    batches: list[B],
    store: Callable[[list[B]], int],
    stats: WriterStats,
    stored: Callable[[int], None] = lambda inserted: None,
) -> bool:
    """Store ``batches`` as one commit (``store`` returns the spans inserted, duplicates skipped),
    count it, call ``stored(inserted)`` and only then answer each batch's request; the batches
    fail as a whole, each request hearing why. False when it failed."""
    rows = sum(b.table.num_rows for b in batches)
    started = time.perf_counter()
    try:
        inserted = store(batches)
    except Exception as exc:
        stats.failed_commits += 1
        log.error("commit of %d spans failed: %s", rows, exc)
        error = StoreError(f"could not store spans: {exc}")
        for batch in batches:
            batch.future.set_exception(error)
        return False
    stats.record_commit(inserted, rows - inserted, time.perf_counter() - started)
    stored(inserted)  # before the answers: a reader asking after one waits for this commit's pass
    for batch in batches:
        batch.future.set_result(batch.table.num_rows)
    return True


class Queued(Generic[B]):
    """A store's write queue and its one writer thread, which runs the jobs (:meth:`_work`) and
    commits (:meth:`_commit`) in the order they were queued until :meth:`_stop`; after each, and
    when nothing came within :meth:`_wait` seconds, :meth:`_between` (the thread's own work)."""

    def __init__(self, writes: WriteQueue[B], make: Callable[[pa.Table], B], thread: str) -> None:
        self._writes = writes
        self._make = make
        self._thread = threading.Thread(target=self._run, name=thread, daemon=True)

    def submit(self, table: pa.Table) -> Future[int]:
        """Queue a batch; the future resolves to its row count once stored.

        Raises :class:`QueueFull` when the queue holds too many batches or spans.
        """
        return self._writes.submit(table, self._make)

    def run_job(self, work: Callable[[Any], Any]) -> Future[Any]:
        """Run ``work(connection)`` on the writer's thread between commits."""
        return self._writes.run_job(work)

    @property
    def queue_depth(self) -> int:
        """Batches waiting for the writer."""
        return self._writes.depth

    @property
    def queued_rows(self) -> int:
        """Spans waiting for the writer."""
        return self._writes.rows

    def _stop(self) -> bool:
        """Take nothing more and wait for the thread to finish what is queued (False: stopped already)."""
        if not self._writes.close():
            return False
        self._thread.join()
        return True

    def _run(self) -> None:
        stop = False
        while not stop:
            work = self._writes.take(self._wait())
            stop = work is STOP
            if isinstance(work, Job):
                try:
                    result = self._work(work.work)
                except Exception as exc:
                    work.future.set_exception(exc)
                else:
                    work.future.set_result(result)
            elif isinstance(work, list):
                self._commit(work)
            self._between(stop)

    def _wait(self) -> float | None:
        return None

    def _work(self, work: Callable[[Any], Any]) -> Any:
        raise NotImplementedError

    def _commit(self, batches: list[B]) -> None:
        raise NotImplementedError

    def _between(self, stop: bool) -> None:
        pass
