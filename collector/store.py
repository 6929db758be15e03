"""The DuckDB store: schema by migrations, one writer thread with group commit, a deriver thread, read cursors.

Only the collector process opens the file read-write. Requests hand Arrow tables to
:meth:`Store.submit` and are answered when the returned future resolves, which happens
only after the transaction holding their spans has committed. Queued batches are merged
into one transaction (group commit), so a busy collector makes fewer, larger commits.

In each commit's transaction the writer

1. skips spans already stored (a re-delivered span has the same ids *and* start time, so
   the anti-join only reads the incoming batch's time range; zone maps skip the rest),
2. inserts the rest from Arrow (``INSERT ... SELECT``),
3. records the touched traces in ``derive_pending`` (with the earliest start among the
   trace's incoming spans), and commits: the requests are answered here.

Everything computed from more than one span happens in a derive pass over every pending
trace at once, on its own thread and connection, in one transaction that also deletes the
``derive_pending`` rows it covered (the rows its snapshot holds: commits made while it runs stay
pending for the next pass):

- ``run_id`` of every span of those traces: the top-most ``invoke_agent`` ancestor. Run
  spans usually arrive after their children, so spans stored earlier are updated when
  their run arrives. A trace's spans are read from ``run_skew`` before the earliest of its
  new spans or of its known runs (a run starts before its children; the margin is for
  clocks of other services), never more than ``run_lookback`` before its new spans (a run
  longer than that keeps older children unresolved). So a pass reads the spans of the last
  few minutes, not of the last hours, however many are stored,
- ``step`` where the producer gave none,
- the derived per-run tables (:mod:`loopsight.analytics.derive`).

The deriver runs it ``derive_interval`` seconds after the first commit it has to cover once
``derive_rows`` spans wait for it, else ``derive_max_wait`` seconds after (busy or idle),
when a reader asks for it, on close, and on open if a crash left pending rows; a failed pass
is retried after a wait that doubles up to ``max_derive_retry``. One pass costs about as
much for one commit's traces as for many (~150-200 ms of CPU, mostly planning), so passes
are spaced rather than run whenever the writer is idle: a trickle of requests would
otherwise pay one pass per request, while under a flood a pass a second stays short
(readers wait for it). Commits go on while a pass runs: only the pass updates stored spans
and only commits insert them, so the two transactions never touch the same row. Unless a
reader asks, a pass also starts at least ``derive_interval`` after the last one ended: a
commit cannot checkpoint the write-ahead log while a pass's transaction is open, so back-to-back
passes under a flood would let the log grow for as long as the flood lasts.
:meth:`Store.reader` asks for that pass when commits are pending and waits for it, so a
query made after an acknowledgement sees resolved runs and current derived tables
("current once read").

Maintenance work (retention deletes) runs on the writer's thread between commits via
:meth:`Store.run_job`. It may race a pass when both delete the derived rows of the same runs
(a pass whose look-back reaches past the retention cutoff): the later of the two fails and
is tried again (the pass after its retry wait, retention at its next interval).

Example:
    >>> store = Store.open("/tmp/doc.duckdb")  # doctest: +SKIP
    >>> store.submit(to_arrow(rows)).result()  # doctest: +SKIP
    12
    >>> store.close()  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from loopsight.analytics.derive import refresh as refresh_derived
from loopsight.migrations import upgrade

log = logging.getLogger("loopsight.collector")

COMMIT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class QueueFull(Exception):
    """The write queue is full: answer 503 with Retry-After."""


class StoreError(Exception):
    """The database cannot be opened or written; the message says why."""


@dataclass
class WriterStats:
    """Counters the writer and the deriver keep for /metrics."""

    commits: int = 0
    rows_committed: int = 0
    duplicates: int = 0
    failed_commits: int = 0
    commit_seconds: list[float] = field(default_factory=list)
    commit_bucket_counts: list[int] = field(default_factory=lambda: [0] * (len(COMMIT_BUCKETS) + 1))
    commit_seconds_sum: float = 0.0
    derive_passes: int = 0
    failed_derives: int = 0
    set_aside_traces: int = 0
    derive_seconds_sum: float = 0.0

    def record_commit(self, inserted: int, duplicates: int, seconds: float) -> None:
        self.commits += 1
        self.rows_committed += inserted
        self.duplicates += duplicates
        self.commit_seconds.append(seconds)
        del self.commit_seconds[:-1024]
        self.commit_seconds_sum += seconds
        self.commit_bucket_counts[bisect_left(COMMIT_BUCKETS, seconds)] += 1

    def record_derive(self, seconds: float) -> None:
        self.derive_passes += 1
        self.derive_seconds_sum += seconds


@dataclass
class _Pending:
    """A submitted batch, made ready for the writer on the submitting thread: its maps as
    entries (see ``_INSERT_SQL``) and the earliest start of each of its traces."""

    table: pa.Table
    traces: list[str]
    since: list[Any]
    future: Future[int] = field(default_factory=Future)

    @classmethod
    def of(cls, table: pa.Table) -> _Pending:
        first = (
            table.select(["TraceId", "Timestamp"])
            .group_by("TraceId", use_threads=False)
            .aggregate([("Timestamp", "min")])
        )
        return cls(
            _maps_as_entries(table), first.column("TraceId").to_pylist(), first.column("Timestamp_min").to_pylist()
        )


@dataclass
class _Job:
    work: Callable[[duckdb.DuckDBPyConnection], Any]
    future: Future[Any] = field(default_factory=Future)


_STOP = object()

_MAP_COLUMNS = ("ResourceAttributes", "SpanAttributes")

# Arrow MAP -> DuckDB MAP conversion validates every key one by one; handing DuckDB the
# same entries as a list of structs and building the map in SQL is about twice as fast.
_INSERT_SQL = """
INSERT INTO spans BY NAME
SELECT * REPLACE (map_from_entries("ResourceAttributes") AS "ResourceAttributes",
                  map_from_entries("SpanAttributes") AS "SpanAttributes")
FROM incoming i
WHERE NOT EXISTS (
    SELECT 1 FROM spans s
    WHERE s."Timestamp" BETWEEN $lo AND $hi AND s."TraceId" = i."TraceId" AND s."SpanId" = i."SpanId"
)
"""

# Per pending trace, the earliest start a pass must read from: its new spans or its known
# runs (a run span starts before its children), less the skew margin, bounded by the look-back.
_PENDING_SQL = """
SELECT p.trace_id AS "TraceId",
       greatest(least(min(p.since), min(f.started_at)) - $skew, min(p.since) - $lookback) AS since
FROM derive_pending p
LEFT JOIN run_facts f
       ON f.trace_id = p.trace_id AND f.started_at >= (SELECT min(since) FROM derive_pending) - $lookback
GROUP BY p.trace_id
"""

RESOLVE_RUNS_SQL = """
WITH RECURSIVE t AS (
    SELECT "TraceId" AS tid, "SpanId" AS sid, "ParentSpanId" AS pid, span_type = 'agent' AS is_agent
    FROM spans
    WHERE "Timestamp" >= $since AND "TraceId" IN (SELECT "TraceId" FROM touched)
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
WHERE spans."Timestamp" >= $since
  AND spans."TraceId" = resolved.tid AND spans."SpanId" = resolved.sid
  AND spans.run_id IS DISTINCT FROM resolved.run_id
"""


# Producers other than loopsight rarely number steps: number a run's llm spans by start
# time, and give each tool span the step of the last llm span started before it. An llm
# span under an llm span (an instrumentor's chat span inside our model call) is part of
# that call: it takes the step of its top-most llm ancestor and is not numbered itself.
# Only spans without a step are filled, so a producer's own numbering is never changed.
DERIVE_STEPS_SQL = """
WITH RECURSIVE open_traces AS (
    SELECT DISTINCT "TraceId" AS tid FROM spans
    WHERE "Timestamp" >= $since AND step IS NULL AND run_id IS NOT NULL AND span_type IN ('llm', 'tool')
      AND "TraceId" IN (SELECT "TraceId" FROM touched)
),
calls AS (
    SELECT "TraceId" AS tid, "SpanId" AS sid, "ParentSpanId" AS pid, run_id, span_type, "Timestamp" AS ts, step
    FROM spans
    WHERE "Timestamp" >= $since AND span_type IN ('llm', 'tool') AND run_id IS NOT NULL
      AND "TraceId" IN (SELECT tid FROM open_traces)
),
nested AS (
    SELECT c.tid, c.sid, p.sid AS parent FROM calls c JOIN calls p ON p.tid = c.tid AND p.sid = c.pid
    WHERE c.span_type = 'llm' AND p.span_type = 'llm'
),
up(tid, sid, anc, depth) AS (
    SELECT tid, sid, parent, 1 FROM nested
    UNION ALL
    SELECT u.tid, u.sid, n.parent, u.depth + 1 FROM up u JOIN nested n ON n.tid = u.tid AND n.sid = u.anc
    WHERE u.depth < 64
),
top_llm AS (
    SELECT tid, sid, arg_max(anc, depth) AS anc FROM up GROUP BY tid, sid
),
llm AS (
    SELECT tid, sid, run_id, ts, step, row_number() OVER (PARTITION BY tid, run_id ORDER BY ts, sid) - 1 AS n
    FROM calls c ANTI JOIN nested x ON x.tid = c.tid AND x.sid = c.sid
    WHERE c.span_type = 'llm'
),
numbered AS (
    SELECT tid, sid, n AS new_step FROM llm
    UNION ALL
    SELECT t.tid, t.sid, coalesce(l.step, l.n) FROM top_llm t JOIN llm l ON l.tid = t.tid AND l.sid = t.anc
    UNION ALL
    SELECT c.tid, c.sid, coalesce(l.n, 0) FROM calls c
    ASOF LEFT JOIN llm l ON c.tid = l.tid AND c.run_id = l.run_id AND c.ts >= l.ts
    WHERE c.span_type = 'tool'
)
UPDATE spans SET step = numbered.new_step
FROM numbered
WHERE spans."Timestamp" >= $since AND spans."TraceId" = numbered.tid AND spans."SpanId" = numbered.sid
  AND spans.step IS NULL
"""


def _maps_as_entries(table: pa.Table) -> pa.Table:
    for name in _MAP_COLUMNS:
        index = table.schema.get_field_index(name)
        column = table.column(index).combine_chunks()
        entries = pa.ListArray.from_arrays(
            column.offsets,
            pa.StructArray.from_arrays([column.keys, column.items], names=["key", "value"]),
            mask=column.is_null(),
        )
        table = table.set_column(index, name, entries)
    return table


def _unique_spans(table: pa.Table) -> pa.Table:
    """Drop repeats of the same (TraceId, SpanId) inside one batch (first one wins)."""
    keys = pc.binary_join_element_wise(table.column("TraceId"), table.column("SpanId"), "")
    if pc.count_distinct(keys).as_py() == table.num_rows:
        return table
    seen: set[str] = set()
    mask = []
    for key in keys.to_pylist():
        mask.append(key not in seen)
        seen.add(key)
    return table.filter(pa.array(mask))


class Store:
    """One DuckDB file owned by this process: spans inserted by one writer thread, derived by one deriver thread."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        path: str,
        *,
        max_queue: int = 256,
        max_queue_rows: int = 200_000,
        max_batch_rows: int = 50_000,
        run_lookback: timedelta = timedelta(hours=6),
        run_skew: timedelta = timedelta(minutes=5),
        derive_interval: float = 1.0,
        derive_rows: int = 5_000,
        derive_max_wait: float = 5.0,
        max_derive_retry: float = 60.0,
        barrier_timeout: float = 5.0,
    ) -> None:
        self.path = path
        self._con = con
        self._queue: queue.Queue[Any] = queue.Queue()
        self._max_queue = max_queue
        self._max_queue_rows = max_queue_rows
        self._max_batch_rows = max_batch_rows
        self._run_lookback = run_lookback
        self._run_skew = run_skew
        self._queued_batches = 0
        self._queued_rows = 0
        self._derive_interval = derive_interval
        self._derive_rows = derive_rows
        self._derive_max_wait = derive_max_wait
        self._max_derive_retry = max_derive_retry
        self._derive_retry = 0.0  # after failed passes: the growing wait before the next try
        self._retry_due = 0.0  # no pass before this while retrying
        self._last_pass_end = 0.0  # unless a reader asks, no pass before derive_interval after this
        self._barrier_timeout = barrier_timeout
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)  # the deriver waits on it
        # Commits are numbered; a pass covers every commit up to the number it read before its
        # snapshot. Readers wait for a pass covering the commits acknowledged when they asked.
        self._committed = 0
        self._committed_rows = 0
        self._derived = 0
        self._derived_rows = 0
        self._commit_times: deque[tuple[int, float]] = deque()  # (number, when) of commits not derived yet
        self._barriers: list[tuple[int, Future[None]]] = []
        self._writer_done = False
        self.stats = WriterStats()
        self._closed = False
        # fetchall: a result left half read keeps its transaction open, and while it is open the
        # passes' updates of stored spans are never cleaned up, so no checkpoint could ever run.
        if con.execute("SELECT count(*) FROM derive_pending").fetchall()[0][0]:
            log.info("deriving the traces left pending by the last run of %s", path)
            recovery = con.cursor()
            self._committed = 1  # rows a crash left count as one commit
            self._commit_times.append((1, time.monotonic()))
            self._derive(recovery)
            recovery.close()
        self._thread = threading.Thread(target=self._run, name="loopsight-writer", daemon=True)
        self._thread.start()
        self._deriver = threading.Thread(target=self._run_deriver, name="loopsight-deriver", daemon=True)
        self._deriver.start()

    @classmethod
    def open(
        cls,
        path: str,
        *,
        memory_limit: str | None = "256MB",
        threads: int | None = None,
        checkpoint_threshold: str = "128MB",
        **kwargs: Any,
    ) -> Store:
        """Check the directory, migrate the file to the newest schema and start the writer.

        Raises :class:`StoreError` with a readable message when the directory is missing or
        read-only, the file is locked by another process or is not a DuckDB database.
        """
        _check_path(path)
        # Query cursors share this instance: no SQL through them may read or write other files.
        # A checkpoint rewrites the last, partly filled row group: checkpointing every 16 MB
        # of WAL (the default) rewrote the same rows many times and slowed inserts a lot.
        config: dict[str, Any] = {"enable_external_access": False, "checkpoint_threshold": checkpoint_threshold}
        if memory_limit:
            config["memory_limit"] = memory_limit
        if threads:
            config["threads"] = threads
        try:
            upgrade(path)
            con = duckdb.connect(path, config=config)
        except Exception as exc:  # duckdb and SQLAlchemy wrap the same few causes
            raise StoreError(_explain_io_error(path, exc)) from None
        return cls(con, path, **kwargs)

    def submit(self, table: pa.Table) -> Future[int]:
        """Queue a batch; the future resolves to its row count once committed.

        Raises :class:`QueueFull` when the queue holds too many batches or rows.
        """
        with self._lock:
            if self._closed:
                raise QueueFull("the store is shutting down")
            if self._queued_batches >= self._max_queue or (
                self._queued_rows and self._queued_rows + table.num_rows > self._max_queue_rows
            ):
                raise QueueFull(
                    f"write queue is full ({self._queued_batches} batches, {self._queued_rows} spans waiting)"
                )
            self._queued_batches += 1
            self._queued_rows += table.num_rows
        pending = _Pending.of(table)
        with self._lock:  # queued under the lock: close() puts its stop mark under it, so none lands after it
            if not self._closed:
                self._queue.put(pending)
                return pending.future
            self._queued_batches -= 1
            self._queued_rows -= table.num_rows
        raise QueueFull("the store is shutting down")

    def run_job(self, work: Callable[[duckdb.DuckDBPyConnection], Any]) -> Future[Any]:
        """Run ``work(connection)`` on the writer thread between commits (its own transaction)."""
        job = _Job(work)
        with self._lock:
            if not self._closed:
                self._queue.put(job)
                return job.future
        job.future.set_exception(StoreError("the store is closed"))
        return job.future

    @property
    def queue_depth(self) -> int:
        """Batches waiting for the writer."""
        return self._queued_batches

    @property
    def derive_pending_commits(self) -> int:
        """Commits whose traces the next derive pass will derive (0 when the tables are current)."""
        return self._committed - self._derived

    @property
    def queued_rows(self) -> int:
        """Spans waiting for the writer."""
        return self._queued_rows

    def reader(self, *, derived: bool = True) -> duckdb.DuckDBPyConnection:
        """A new connection to the same database for one reader (thread-safe to use alone).

        Its derived tables include every acknowledged span: when commits are waiting for
        their derive pass, this asks the deriver for it and waits (at most ``barrier_timeout``
        seconds, then reads anyway). A connection kept open sees later commits, but only a
        new ``reader()`` call waits for their derivation. ``derived=False`` skips the wait,
        for readers of anything but the derived tables (e.g. ``duckdb_memory()``).

        Example:
            >>> store.submit(table).result()  # doctest: +SKIP
            >>> store.reader().execute("SELECT count(*) FROM run_facts").fetchone()  # doctest: +SKIP
            (3,)
        """
        if derived:
            self.wait_derived()
        return self._con.cursor()

    def wait_derived(self) -> bool:
        """Wait until the derived tables cover every commit acknowledged so far.

        Returns ``False`` if the pass did not finish within ``barrier_timeout`` seconds
        (``True`` also after a pass that failed: the tables are then read as they are).
        Costs nothing when no commit is pending.
        """
        if threading.current_thread() is self._deriver:
            return True
        with self._lock:
            if self._derived >= self._committed or (self._writer_done and not self._deriver.is_alive()):
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

    def size_bytes(self) -> int:
        """Size of the database file plus its write-ahead log."""
        total = 0
        for name in (self.path, self.path + ".wal"):
            with contextlib.suppress(OSError):
                total += os.stat(name).st_size
        return total

    def close(self) -> None:
        """Stop taking batches, commit everything queued, derive it, and close the file."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(_STOP)
        self._thread.join()
        with self._lock:
            self._writer_done = True
            self._wakeup.notify()
        self._deriver.join()
        self._release_barriers(everything=True)  # readers that asked while the last pass ran
        try:
            self._con.close()
        except duckdb.Error as exc:
            log.error("closing %s failed: %s", self.path, exc)

    def _run(self) -> None:
        con = self._con.cursor()
        while True:
            first = self._queue.get()
            if first is _STOP:
                break
            if isinstance(first, _Job):
                self._run_job(con, first)
                continue
            batch = [first]
            rows = first.table.num_rows
            held: Any = None
            while rows < self._max_batch_rows:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if not isinstance(item, _Pending):
                    held = item
                    break
                batch.append(item)
                rows += item.table.num_rows
            with self._lock:
                self._queued_batches -= len(batch)
                self._queued_rows -= rows
            self._commit(con, batch)
            if held is _STOP:
                break
            if held is not None:
                self._run_job(con, held)
        con.close()

    def _run_deriver(self) -> None:
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
        wait = self._derive_interval if rows >= self._derive_rows else self._derive_max_wait
        return max(first + wait, self._retry_due, self._last_pass_end + self._derive_interval)

    def _derive(self, con: duckdb.DuckDBPyConnection) -> None:
        """Recompute the derived tables of every pending trace in one transaction, then
        release the readers waiting for it (also when it failed: they read what is there)."""
        with self._lock:
            covered, covered_rows = self._committed, self._committed_rows
        if covered <= self._derived:
            self._release_barriers()
            return
        started = time.perf_counter()
        try:
            con.begin()  # after reading ``covered``: its snapshot holds those commits
            pending = con.sql(
                _PENDING_SQL, params={"skew": self._run_skew, "lookback": self._run_lookback}
            ).to_arrow_table()
            if pending.num_rows:
                self._derive_traces(con, pending)
                con.execute("DELETE FROM derive_pending")
            con.commit()
        except _DATA_ERRORS as exc:
            # Deterministic: retried as it is, one bad trace would hold back every later one.
            _rollback(con)
            self.stats.failed_derives += 1
            log.error("deriving the per-run tables failed: %s; deriving the pending traces in parts", exc)
            if self._isolate(con):
                self._passed(covered, covered_rows, started)
            else:
                self._failed()
        except Exception as exc:  # the rows stay pending; the next pass tries again
            _rollback(con)
            self.stats.failed_derives += 1
            log.error("deriving the per-run tables failed: %s", exc)
            self._failed()
        else:
            self._passed(covered, covered_rows, started)
        finally:
            with contextlib.suppress(duckdb.Error):
                con.unregister("touched")

    def _failed(self) -> None:
        with self._lock:
            # Not after every commit while it keeps failing, nor every interval when idle.
            self._derive_retry = min(max(2 * self._derive_retry, self._derive_interval), self._max_derive_retry)
            self._retry_due = time.monotonic() + self._derive_retry
        self._release_barriers(everything=True)

    def _passed(self, covered: int, covered_rows: int, started: float) -> None:
        with self._lock:
            self._derived, self._derived_rows = covered, covered_rows
            while self._commit_times and self._commit_times[0][0] <= covered:
                self._commit_times.popleft()
            self._derive_retry = self._retry_due = 0.0
            self._last_pass_end = time.monotonic()
        self.stats.record_derive(time.perf_counter() - started)
        self._release_barriers()

    def _derive_traces(self, con: duckdb.DuckDBPyConnection, pending: pa.Table) -> None:
        """Derive the traces of ``pending`` (``TraceId``, ``since``) in the caller's transaction."""
        con.register("touched", pending.select(["TraceId"]))
        since = pc.min(pending.column("since")).as_py()
        con.execute(RESOLVE_RUNS_SQL, {"since": since})
        # Steps can be derived once a trace's run is known, which may be a later commit.
        con.execute(DERIVE_STEPS_SQL, {"since": since})
        refresh_derived(con, since=since)

    def _isolate(self, con: duckdb.DuckDBPyConnection) -> bool:
        """Derive the pending traces in halves, then halves of the halves that fail: a trace
        that fails on its own is set aside (logged and counted), its spans kept as stored.
        ``False``, leaving the rest pending, when something other than the data failed, or
        when no part succeeded or too many traces failed alone (then it is not the data)."""
        try:
            traces = con.sql('SELECT DISTINCT trace_id AS "TraceId" FROM derive_pending').to_arrow_table()
        except Exception as exc:
            log.error("deriving the per-run tables failed: %s", exc)
            return False
        parts, alone, succeeded = [traces], [], False
        while parts:
            part = parts.pop()
            if not part.num_rows:
                continue
            try:
                con.begin()
                # Read in the part's own snapshot: a run span committed since started first.
                con.register("part_traces", part)
                pending = con.sql(
                    f'SELECT * FROM ({_PENDING_SQL}) WHERE "TraceId" IN (SELECT "TraceId" FROM part_traces)',
                    params={"skew": self._run_skew, "lookback": self._run_lookback},
                ).to_arrow_table()
                if pending.num_rows:
                    self._derive_traces(con, pending)
                    con.execute('DELETE FROM derive_pending WHERE trace_id IN (SELECT "TraceId" FROM touched)')
                con.commit()
                succeeded = True
                continue
            except _DATA_ERRORS as exc:
                _rollback(con)
                failure = exc
            except Exception as exc:  # not the data: leave the rest pending for the next pass
                _rollback(con)
                log.error("deriving the per-run tables failed: %s", exc)
                return False
            finally:
                con.unregister("part_traces")
            if part.num_rows > 1:
                half = part.num_rows // 2
                parts += [part.slice(half), part.slice(0, half)]
            else:
                alone.append((part.column("TraceId")[0].as_py(), failure))
        if alone and (not succeeded or len(alone) > max(3, traces.num_rows // 10)):
            log.error(
                "deriving the per-run tables failed for %d of %d pending traces; they stay pending",
                len(alone),
                traces.num_rows,
            )
            return False
        for trace_id, failure in alone:
            try:
                con.execute("DELETE FROM derive_pending WHERE trace_id = $t", {"t": trace_id})
            except duckdb.Error as exc:
                log.error("deriving the per-run tables failed: %s", exc)
                return False
            self.stats.set_aside_traces += 1
            log.error(
                "trace %s cannot be derived (%s): its spans are kept, its runs are left out of the per-run tables",
                trace_id,
                failure,
            )
        return True

    def _release_barriers(self, everything: bool = False) -> None:
        with self._lock:
            done = [b for b in self._barriers if everything or b[0] <= self._derived]
            self._barriers = [b for b in self._barriers if not (everything or b[0] <= self._derived)]
        for _, barrier in done:
            barrier.set_result(None)

    def _run_job(self, con: duckdb.DuckDBPyConnection, job: _Job) -> None:
        try:
            con.begin()
            result = job.work(con)
            con.commit()
        except Exception as exc:
            _rollback(con)
            job.future.set_exception(exc)
            return
        job.future.set_result(result)

    def _commit(self, con: duckdb.DuckDBPyConnection, batch: list[_Pending]) -> None:
        started = time.perf_counter()
        incoming = _unique_spans(pa.concat_tables([p.table for p in batch]))
        bounds = pc.min_max(incoming.column("Timestamp"))
        lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
        try:
            con.begin()
            con.register("incoming", incoming)
            inserted = con.execute(_INSERT_SQL, {"lo": lo, "hi": hi}).fetchall()[0][0]
            if inserted:  # a trace listed twice (or with duplicates only) costs the pass nothing more
                con.execute(
                    "INSERT INTO derive_pending SELECT unnest($traces), unnest($since)",
                    {"traces": [t for p in batch for t in p.traces], "since": [t for p in batch for t in p.since]},
                )
            con.commit()
        except Exception as exc:  # the batch fails as a whole; each request hears why
            _rollback(con)
            self.stats.failed_commits += 1
            log.error("commit of %d spans failed: %s", incoming.num_rows, exc)
            error = StoreError(f"could not store spans: {exc}")
            for pending in batch:
                pending.future.set_exception(error)
            return
        finally:
            with contextlib.suppress(duckdb.Error):
                con.unregister("incoming")
        self.stats.record_commit(
            inserted, sum(p.table.num_rows for p in batch) - inserted, time.perf_counter() - started
        )
        if inserted:
            with self._lock:  # before the answers: a reader asking after one waits for this commit's pass
                self._committed += 1
                self._committed_rows += inserted
                self._commit_times.append((self._committed, time.monotonic()))
                self._wakeup.notify()
        for pending in batch:
            pending.future.set_result(pending.table.num_rows)


# What the data can cause (an overflow, a bad cast), unlike a full disk or a lost file.
_DATA_ERRORS = (duckdb.ConversionException, duckdb.OutOfRangeException)


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    with contextlib.suppress(duckdb.Error):
        con.rollback()


def _check_path(path: str) -> None:
    directory = Path(path).resolve().parent
    if not directory.is_dir():
        raise StoreError(f"cannot create {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise StoreError(f"cannot write {path}: directory {directory} is not writable")
    if os.path.exists(path) and not os.access(path, os.R_OK | os.W_OK):
        raise StoreError(f"cannot open {path}: the file is not readable and writable by this user")
    if os.path.isfile(path) and os.path.getsize(path) > 0:
        with open(path, "rb") as file:
            header = file.read(12)
        # DuckDB 2 would open a .json or .csv file as a table instead of refusing it
        if header[8:12] != b"DUCK":
            raise StoreError(f"{path} is not a DuckDB database (or is damaged): it has no DuckDB file header")


def _explain_io_error(path: str, exc: Exception) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
    lowered = text.lower()
    if "lock" in lowered:
        return f"{path} is locked by another process (only one collector may own a DuckDB file; read it through the collector's API): {text}"
    if "not a valid duckdb database" in lowered or "corrupt" in lowered or "magic" in lowered:
        return f"{path} is not a DuckDB database (or is damaged): {text}"
    return f"cannot open {path}: {text}"
