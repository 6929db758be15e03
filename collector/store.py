"""The DuckDB store: schema by migrations, one writer thread with group commit, read cursors.

Only the collector process opens the file read-write. Requests hand Arrow tables to
:meth:`Store.submit` and are answered when the returned future resolves, which happens
only after the transaction holding their spans has committed.

Example:
    >>> store = Store.open("/tmp/doc.duckdb")  # doctest: +SKIP
    >>> store.submit(to_arrow(rows)).result()  # doctest: +SKIP
    >>> store.close()  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa
import sqlalchemy.exc

from loopsight.migrations import upgrade

log = logging.getLogger("loopsight.collector")


class QueueFull(Exception):
    """The write queue is full: answer 503 with Retry-After."""


class StoreError(Exception):
    """The database cannot be opened or written; the message says why."""


# Resolve each span's run: the top-most invoke_agent ancestor in its trace. Run spans
# usually arrive after their children, so every commit re-resolves the traces it touched.
RESOLVE_RUNS_SQL = """
WITH RECURSIVE t AS (
    SELECT "TraceId" AS tid, "SpanId" AS sid, "ParentSpanId" AS pid, span_type = 'agent' AS is_agent
    FROM spans WHERE "TraceId" IN (SELECT "TraceId" FROM touched)
),
chain(tid, sid, cur, depth, run_id) AS (
    SELECT tid, sid, pid, 0, CASE WHEN is_agent THEN sid END FROM t
    UNION ALL
    SELECT c.tid, c.sid, p.pid, c.depth + 1, CASE WHEN p.is_agent THEN p.sid ELSE c.run_id END
    FROM chain c JOIN t p ON p.tid = c.tid AND p.sid = c.cur
    WHERE c.depth < 64
),
resolved AS (
    SELECT tid, sid, arg_max(run_id, depth) AS run_id FROM chain GROUP BY tid, sid
)
UPDATE spans SET run_id = resolved.run_id
FROM resolved
WHERE spans."TraceId" = resolved.tid AND spans."SpanId" = resolved.sid
  AND spans.run_id IS DISTINCT FROM resolved.run_id
"""


@dataclass
class _Pending:
    table: pa.Table
    future: Future[int] = field(default_factory=Future)


@dataclass
class WriterStats:
    """Counters the writer keeps for /metrics."""

    commits: int = 0
    rows_committed: int = 0
    commit_seconds: list[float] = field(default_factory=list)


class Store:
    """One DuckDB file owned by this process, written by a single thread."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: str, *, max_queue: int = 256, max_batch_rows: int = 50_000) -> None:
        self.path = path
        self._con = con
        self._queue: queue.Queue[_Pending | None] = queue.Queue(maxsize=max_queue)
        self._max_batch_rows = max_batch_rows
        self.stats = WriterStats()
        self._thread = threading.Thread(target=self._run, name="loopsight-writer", daemon=True)
        self._closed = False
        self._thread.start()

    @classmethod
    def open(cls, path: str, **kwargs: int) -> "Store":
        """Migrate the file to the newest schema and start the writer."""
        try:
            upgrade(path)
            con = duckdb.connect(path)
            # Query cursors share this instance: no SQL may touch files beyond the DB itself.
            con.execute("SET enable_external_access = false")
        except (duckdb.Error, sqlalchemy.exc.DBAPIError) as exc:  # migrations wrap duckdb's error
            raise StoreError(_explain_io_error(path, getattr(exc, "orig", None) or exc)) from None
        return cls(con, path, **kwargs)

    def submit(self, table: pa.Table) -> Future[int]:
        """Queue a batch; the future resolves to its row count once committed."""
        if self._closed:
            raise QueueFull("the store is shutting down")
        pending = _Pending(table)
        try:
            self._queue.put_nowait(pending)
        except queue.Full:
            raise QueueFull("write queue is full") from None
        return pending.future

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    def reader(self) -> duckdb.DuckDBPyConnection:
        """A new connection to the same database for one reader (thread-safe to use alone)."""
        return self._con.cursor()

    def close(self) -> None:
        """Drain the queue, commit what is in it, and close the file."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join()
        self._con.close()

    def _run(self) -> None:
        con = self._con.cursor()
        stop = False
        while not stop:
            first = self._queue.get()
            if first is None:
                break
            batch = [first]
            rows = first.table.num_rows
            while rows < self._max_batch_rows:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
                rows += item.table.num_rows
            self._commit(con, batch)
        con.close()

    def _commit(self, con: duckdb.DuckDBPyConnection, batch: list[_Pending]) -> None:
        started = time.perf_counter()
        incoming = pa.concat_tables([p.table for p in batch])
        touched = incoming.select(["TraceId"])
        try:
            con.begin()
            con.register("incoming", incoming)
            con.register("touched", touched)
            con.execute("INSERT OR IGNORE INTO spans BY NAME SELECT * FROM incoming")
            con.execute(RESOLVE_RUNS_SQL)
            con.commit()
        except Exception as exc:  # the batch fails as a whole; each request hears why
            try:
                con.rollback()
            except duckdb.Error:
                pass
            log.error("commit of %d spans failed: %s", incoming.num_rows, exc)
            for pending in batch:
                pending.future.set_exception(StoreError(str(exc)))
            return
        finally:
            con.unregister("incoming")
            con.unregister("touched")
        elapsed = time.perf_counter() - started
        self.stats.commits += 1
        self.stats.rows_committed += incoming.num_rows
        self.stats.commit_seconds.append(elapsed)
        del self.stats.commit_seconds[:-1024]
        for pending in batch:
            pending.future.set_result(pending.table.num_rows)


def _explain_io_error(path: str, exc: Exception) -> str:
    text = str(exc)
    if "lock" in text.lower():
        return f"{path} is locked by another process (only one collector may own a DuckDB file): {text}"
    return f"cannot open {path}: {text}"
