"""What every store offers: a writer that takes Arrow batches, and readers that answer SQL.

The collector, ``loopsight ingest``, the query API, alerts and the dashboard use stores only
through these two protocols, so the same code runs on the embedded DuckDB file and on
ClickHouse. SQL given to :meth:`Reader.rows` is written in DuckDB's dialect; a ClickHouse
reader runs its translation.

Example:
    >>> from loopsight.stores import open_writer
    >>> writer = open_writer("/tmp/doc.duckdb")  # doctest: +SKIP
    >>> writer.submit(table).result()  # doctest: +SKIP
    12
    >>> writer.reader().rows("SELECT count(*) AS runs FROM run_facts")  # doctest: +SKIP
    [{'runs': 3}]
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import pyarrow as pa

from loopsight.errors import LoopsightError

COMMIT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class StoreError(LoopsightError):
    """The store cannot be opened, read or written; the message says why."""


class QueueFull(LoopsightError):
    """The write queue is full: answer 503 with Retry-After."""


@dataclass
class WriterStats:
    """Counters a writer and its deriver keep for /metrics."""

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


@runtime_checkable
class Reader(Protocol):
    """One read connection: DuckDB-dialect SQL in, JSON-ready rows out."""

    dialect: str
    """``"duckdb"`` or ``"clickhouse"``: what the engine is (the SQL given is always DuckDB's)."""

    def rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run ``sql`` with named parameters; each row a dict of JSON-ready values."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Writer(Protocol):
    """The collector's store: batches in, acknowledged once stored, derived in the background."""

    path: str
    stats: WriterStats

    def submit(self, table: pa.Table) -> Future[int]:
        """Queue a normalized batch (:data:`loopsight.ingest.batch.SCHEMA`); the future resolves
        to its row count once it is stored. Raises :class:`QueueFull`."""
        ...

    @property
    def queue_depth(self) -> int: ...

    @property
    def queued_rows(self) -> int: ...

    def reader(self) -> Reader:
        """A reader whose derived tables cover every batch acknowledged so far."""
        ...

    def run_job(self, work: Callable[[Any], Any]) -> Future[Any]:
        """Run maintenance ``work(connection)`` on the writer's thread between commits."""
        ...

    def size_bytes(self) -> int: ...

    def secret_key(self) -> bytes:
        """The store's secret (the same every time it is opened): keys what ingest hashes of content."""
        ...

    def close(self) -> None: ...
