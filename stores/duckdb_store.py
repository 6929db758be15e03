"""The DuckDB store: one file owned by this process, one writer thread with group commit.

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

Everything computed from more than one span is the deriver's
(:mod:`loopsight.stores.duckdb_deriver`), on its own thread and connection; commits go on while
a pass runs (only the pass updates stored spans and only commits insert them, so the two
transactions never touch the same row). :meth:`Store.reader` waits for the pass covering the
commits acknowledged when it is called, so a query made after an acknowledgement sees resolved
runs and current derived tables.

Maintenance work (retention deletes) runs on the writer's thread between commits via
:meth:`Store.run_job`. It may race a pass when both delete the derived rows of the same runs
(a pass whose look-back reaches past the retention cutoff): the later of the two fails and
is tried again (the pass after its retry wait, retention at its next interval).

Example:
    >>> store = Store.open("/tmp/doc.duckdb")  # doctest: +SKIP
    >>> store.submit(to_arrow(rows)).result()  # doctest: +SKIP
    12
    >>> store.reader().rows("SELECT count(*) AS runs FROM run_facts")  # doctest: +SKIP
    [{'runs': 3}]
    >>> store.close()  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from loopsight.ingest.batch import unique_spans
from loopsight.migrations import ForeignDatabase, upgrade
from loopsight.prices import PriceBook, default_book
from loopsight.stores.derive import prune, reprice
from loopsight.stores.duckdb_deriver import Deriver, rollback
from loopsight.stores.files import check_path, explain_io_error, secret_key
from loopsight.stores.protocol import StoreError, WriterStats
from loopsight.stores.sqlfiles import jsonable
from loopsight.stores.writer import Queued, WriteQueue, commit

log = logging.getLogger("loopsight.collector")


@lru_cache(maxsize=1024)
def _parameters(sql: str) -> frozenset[str]:
    # DuckDB refuses named parameters a statement does not use: pass only its own.
    return frozenset(_PARAMETER.findall(sql))


_PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


_DELETE_CHUNK_SQL = """
DELETE FROM spans WHERE rowid IN (
    SELECT rowid FROM spans WHERE "Timestamp" < $cutoff LIMIT $chunk
)
"""


class DuckDBReader:
    """A :class:`~loopsight.stores.protocol.Reader` on a DuckDB connection; every other
    attribute is the connection's (``execute``, ``sql``, ``cursor``, ...).

    Example:
        >>> DuckDBReader(duckdb.connect()).rows("SELECT 1 AS x")
        [{'x': 1}]
    """

    dialect = "duckdb"

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        given = params or {}
        cursor = self.con.execute(sql, {name: given[name] for name in _parameters(sql) if name in given})
        names = [d[0] for d in cursor.description]
        return [{n: jsonable(v) for n, v in zip(names, row, strict=True)} for row in cursor.fetchall()]

    def close(self) -> None:
        self.con.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.con, name)


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


class Store(Queued[_Pending]):
    """One DuckDB file owned by this process: spans inserted by one writer thread, derived by its :class:`Deriver`."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        path: str,
        *,
        max_queue: int = 256,
        max_queue_rows: int = 200_000,
        max_batch_rows: int = 50_000,
        prices: PriceBook | None = None,
        **derive: Any,
    ) -> None:
        """``derive``: the :class:`~loopsight.stores.duckdb_deriver.Deriver`'s settings
        (``derive_interval``, ``run_lookback``, ``barrier_timeout``, ...). ``prices`` (default: the
        bundled table alone) reprices every model the file holds now, and new ones as they come."""
        self.path = path
        self._con = con
        writes: WriteQueue[_Pending] = WriteQueue(
            max_queue=max_queue, max_queue_rows=max_queue_rows, max_batch_rows=max_batch_rows
        )
        super().__init__(writes, _Pending.of, "loopsight-writer")
        self.stats = WriterStats()
        self.prices = prices or default_book()
        self.deriver = Deriver(con, self.stats, prices=self.prices, **derive)
        self._reprice()
        self.deriver.recover()
        self._writer = con.cursor()
        self._thread.start()
        self.deriver.start()

    def secret_key(self) -> bytes:
        """This store's secret key (see :func:`loopsight.stores.files.secret_key`)."""
        return secret_key(self.path)

    def _reprice(self) -> None:
        """Rewrite ``model_prices`` from this writer's price book (before anything is derived)."""
        con = self._con.cursor()
        try:
            con.begin()
            reprice(con, self.prices)
            con.commit()
        except Exception:
            rollback(con)
            raise
        finally:
            con.close()

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
        read-only, the file is locked by another process, is not a DuckDB database or is another
        program's (tables, no loopsight schema: left untouched).
        """
        check_path(path)
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
        except ForeignDatabase as exc:
            raise StoreError(str(exc)) from None
        except Exception as exc:  # duckdb and SQLAlchemy wrap the same few causes
            raise StoreError(explain_io_error(path, exc)) from None
        return cls(con, path, **kwargs)

    @property
    def derive_pending_commits(self) -> int:
        """Commits whose traces the next derive pass will derive (0 when the tables are current)."""
        return self.deriver.pending_commits

    def reader(self, *, derived: bool = True) -> DuckDBReader:
        """A new connection to the same database for one reader (thread-safe to use alone).

        Its derived tables include every acknowledged span: when commits are waiting for
        their derive pass, this asks the deriver for it and waits (at most ``barrier_timeout``
        seconds, then reads anyway). A connection kept open sees later commits, but only a
        new ``reader()`` call waits for their derivation. ``derived=False`` skips the wait,
        for readers of anything but the derived tables (e.g. ``duckdb_memory()``).
        """
        if derived:
            self.deriver.wait()
        return DuckDBReader(self._con.cursor())

    def wait_derived(self) -> bool:
        """Wait until the derived tables cover every commit acknowledged so far (see :meth:`Deriver.wait`)."""
        return self.deriver.wait()

    @staticmethod
    def delete_before(con: duckdb.DuckDBPyConnection, cutoff: datetime, chunk: int) -> int:
        """Retention, one job: up to ``chunk`` spans that started before ``cutoff``, and the derived
        rows of the runs that did; the spans deleted (fewer than ``chunk``: nothing older is left)."""
        deleted = con.execute(_DELETE_CHUNK_SQL, {"cutoff": cutoff, "chunk": chunk}).fetchone()
        prune(con, cutoff)
        return int(deleted[0]) if deleted else 0

    def size_bytes(self) -> int:
        """Size of the database file plus its write-ahead log."""
        total = 0
        for name in (self.path, self.path + ".wal"):
            with contextlib.suppress(OSError):
                total += os.stat(name).st_size
        return total

    def close(self) -> None:
        """Stop taking batches, commit everything queued, derive it, and close the file."""
        if not self._stop():
            return
        self._writer.close()
        self.deriver.finish()
        try:
            self._con.close()
        except duckdb.Error as exc:
            log.error("closing %s failed: %s", self.path, exc)

    def _work(self, work: Callable[[duckdb.DuckDBPyConnection], Any]) -> Any:
        """A job in its own transaction."""
        con = self._writer
        try:
            con.begin()
            result = work(con)
            con.commit()
        except Exception:
            rollback(con)
            raise
        return result

    def _commit(self, batch: list[_Pending]) -> None:
        con = self._writer

        def store(batch: list[_Pending]) -> int:
            incoming = unique_spans(pa.concat_tables([p.table for p in batch]))
            bounds = pc.min_max(incoming.column("Timestamp"))
            try:
                con.begin()
                con.register("incoming", incoming)
                params = {"lo": bounds["min"].as_py(), "hi": bounds["max"].as_py()}
                inserted = int(con.execute(_INSERT_SQL, params).fetchall()[0][0])
                if inserted:  # a trace listed twice (or with duplicates only) costs the pass nothing more
                    con.execute(
                        "INSERT INTO derive_pending SELECT unnest($traces), unnest($since)",
                        {"traces": [t for p in batch for t in p.traces], "since": [t for p in batch for t in p.since]},
                    )
                con.commit()
            except Exception:
                rollback(con)
                raise
            finally:
                with contextlib.suppress(duckdb.Error):
                    con.unregister("incoming")
            return inserted

        commit(batch, store, self.stats, self._stored)

    def _stored(self, inserted: int) -> None:
        if inserted:  # a commit of duplicates only leaves the pass nothing to do
            self.deriver.committed(inserted)
