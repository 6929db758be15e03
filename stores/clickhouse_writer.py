"""The collector's ClickHouse writer: the same ``submit(arrow) -> Future`` as the DuckDB store.

Requests hand the normalized Arrow batch to :meth:`ClickHouseWriter.submit`; one writer
thread groups queued batches and inserts them into ``otel_traces`` as one columnar Arrow
insert, resolves every future, then indexes the batch's traces (run index, typed spans,
per-run tables). The ``spans`` view derives the typed columns, so
spans written here and spans written by the OpenTelemetry Collector's exporter read the same;
the writer indexes every trace it wrote right after acknowledging the insert.

Example:
    >>> writer = ClickHouseWriter.open(parse_store_url("chdb:///tmp/loopsight-doc-ch"))  # doctest: +SKIP
    >>> writer.submit(to_arrow(rows)).result()  # doctest: +SKIP
    12
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field

import pyarrow as pa

from loopsight.stores import QueueFull, StoreError, WriterStats
from loopsight.stores.clickhouse import ClickHouseConnection, ClickHouseError, connect
from loopsight.stores.clickhouse_run_index import index_traces
from loopsight.stores.clickhouse_schema import upgrade
from loopsight.stores.otel_rows import batch_to_otel_traces
from loopsight.stores.url import StoreURL

log = logging.getLogger("loopsight.collector")


@dataclass
class _Pending:
    table: pa.Table
    future: Future[int] = field(default_factory=Future)


class ClickHouseWriter:
    """Single-threaded, group-committing writer into a ClickHouse ``otel_traces`` table."""

    def __init__(self, con: ClickHouseConnection, *, max_queue: int = 256, max_batch_rows: int = 100_000) -> None:
        self.path = con.url.redacted()
        self._con = con
        self._table = con.url.table
        self._queue: queue.Queue[_Pending | None] = queue.Queue(maxsize=max_queue)
        self._max_batch_rows = max_batch_rows
        self.stats = WriterStats()
        self._closed = False
        self._queued_rows = 0
        self._rows_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="loopsight-clickhouse-writer", daemon=True)
        self._thread.start()

    @classmethod
    def open(cls, url: StoreURL, **kwargs: int) -> ClickHouseWriter:
        """Connect, apply loopsight's ClickHouse migrations and start the writer."""
        try:
            con = connect(url)
            upgrade(con)
        except ClickHouseError as exc:
            raise StoreError(str(exc)) from None
        return cls(con, **kwargs)

    def submit(self, table: pa.Table) -> Future[int]:
        """Queue a batch; the future resolves to its row count once inserted."""
        if self._closed:
            raise QueueFull("the store is shutting down")
        pending = _Pending(table)
        try:
            self._queue.put_nowait(pending)
        except queue.Full:
            raise QueueFull("write queue is full") from None
        with self._rows_lock:
            self._queued_rows += table.num_rows
        return pending.future

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    @property
    def queued_rows(self) -> int:
        """Spans waiting for the writer."""
        return self._queued_rows

    def reader(self) -> ClickHouseConnection:
        """A connection for one reader (the analytics pick their ClickHouse SQL for it)."""
        return self._con.cursor()

    def close(self) -> None:
        """Drain the queue, insert what is in it, stop the thread."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join()
        self._con.close()

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every batch submitted so far is inserted and indexed; False on timeout.

        Example:
            >>> writer.submit(table).result(); writer.drain()  # doctest: +SKIP
            True
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._queue.all_tasks_done.wait(left)
        return True

    def _run(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            if first is None:
                self._queue.task_done()
                break
            batch = [first]
            rows = first.table.num_rows
            while rows < self._max_batch_rows:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.task_done()
                    stop = True
                    break
                batch.append(item)
                rows += item.table.num_rows
            try:
                self._insert(batch)
            finally:
                for _ in batch:
                    self._queue.task_done()

    def _insert(self, batch: list[_Pending]) -> None:
        with self._rows_lock:
            self._queued_rows -= sum(p.table.num_rows for p in batch)
        started = time.perf_counter()
        try:
            incoming = batch_to_otel_traces(pa.concat_tables([p.table for p in batch]))
            self._con.insert_arrow(self._table, incoming)
        except Exception as exc:  # the batch fails as a whole; each request hears why
            log.error("insert of %d batches into ClickHouse failed: %s", len(batch), exc)
            for pending in batch:
                pending.future.set_exception(StoreError(str(exc)))
            return
        self.stats.commits += 1
        self.stats.rows_committed += incoming.num_rows
        self.stats.commit_seconds.append(time.perf_counter() - started)
        del self.stats.commit_seconds[:-1024]
        for pending in batch:
            pending.future.set_result(pending.table.num_rows)
        # The spans are stored: acknowledge first, then index them (derived data; a failed pass
        # is redone by the readers' indexer, which picks up spans missing from the index).
        try:
            index_traces(self._con, incoming.column("TraceId").unique().to_pylist())
        except Exception as exc:
            log.error("indexing %d new spans in ClickHouse failed (the indexer retries): %s", incoming.num_rows, exc)
