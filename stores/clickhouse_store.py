"""The ClickHouse store: the same tables as DuckDB's, filled by the same derivation.

Spans reach ClickHouse two ways: the collector's batches (``loopsight collector --store
clickhouse://…``: :meth:`ClickHouseStore.submit`, normalized like every batch), and rows the
OpenTelemetry Collector's exporter wrote into ``otel_traces``, which the store imports: the
rows that started after its watermark less ``run_lookback`` and are not in ``spans`` yet are read
back through the same rules (:func:`loopsight.ingest.exporter.otel_traces_rows`). Either way they
land in ``spans_staged`` (re-delivered spans skipped) and their traces in ``derive_pending``.

A derive pass then takes the pending traces' staged and stored spans into an in-memory DuckDB,
runs the one derivation (:func:`loopsight.stores.derive.derive_traces`: run ids, steps, the
per-run tables) and writes the result back: the staged spans into ``spans`` once, the stored
spans it changed and the derived rows since the pass's ``since`` deleted and inserted again. So
both engines hold the same rows, and readers only read: the questions, written in DuckDB's
dialect, are translated (:mod:`loopsight.stores.translate`).

One thread does the inserts, the imports (every ``import_interval`` seconds), the passes
(``derive_interval`` after a commit, or when a reader asks) and maintenance jobs. A deployment
where only the exporter writes runs ``loopsight collector --store clickhouse://…`` for the
imports and passes; without it, exporter-written spans are not derived (readers never write).

Example:
    >>> store = ClickHouseStore.open(parse_store_url("chdb:///tmp/loopsight-doc-ch"))  # doctest: +SKIP
    >>> store.submit(table).result()  # doctest: +SKIP
    12
    >>> store.reader().rows("SELECT count(*) AS runs FROM run_facts")  # doctest: +SKIP
    [{'runs': 3}]
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from loopsight.ingest.batch import to_arrow, unique_spans
from loopsight.ingest.exporter import otel_traces_rows
from loopsight.ingest.normalize import Limits
from loopsight.model import DERIVED, TABLES, duckdb_ddl
from loopsight.prices import PriceBook
from loopsight.stores.clickhouse import ClickHouseConnection, ClickHouseError, connect
from loopsight.stores.clickhouse_schema import exported, upgrade
from loopsight.stores.derive import (
    COSTS_MISSING_SQL,
    PENDING_SQL,
    derive_traces,
    price_rows,
    prices_changed,
    recost,
    session_loops,
)
from loopsight.stores.files import KEY_BYTES
from loopsight.stores.isolation import DATA_ERRORS, derive_in_parts
from loopsight.stores.protocol import StoreError, WriterStats
from loopsight.stores.url import StoreURL
from loopsight.stores.writer import Batch, Queued, WriteQueue, commit

log = logging.getLogger("loopsight.collector")

_EPOCH = datetime(1970, 1, 1)
TRACES_PER_PASS = 2_000
IMPORT_ROWS = 100_000


# The staged spans of some traces not stored already (by a pass that failed, or not yet unstaged)
_UNSTORED = (
    "SELECT * FROM spans_staged WHERE TraceId IN {t:Array(String)} "
    "AND (TraceId, SpanId) NOT IN (SELECT TraceId, SpanId FROM spans WHERE TraceId IN {t:Array(String)})"
)
_KEY = "concat(TraceId, '/', SpanId)"  # a span's key as one value, to pass a list of them
# The spans of some traces already held, stored or staged (both tables sorted by TraceId first)
_HELD = (
    "SELECT TraceId, SpanId FROM spans WHERE TraceId IN {t:Array(String)} "
    "UNION ALL SELECT TraceId, SpanId FROM spans_staged WHERE TraceId IN {t:Array(String)}"
)
# A pass's stored spans. Its start is sent as microseconds: a DateTime64 parameter at or before the
# epoch reaches a subquery as the text of its seconds ('-300'), which ClickHouse cannot read back.
_SINCE = "fromUnixTimestamp64Micro({s:Int64})"
_SCOPE = f"TraceId IN {{t:Array(String)}} AND Timestamp >= {_SINCE}"
# In a pass's scratch DuckDB: the spans it writes (the staged, and the stored it changed) and the keys of those stored
_CHANGED = """FROM spans s {join} stored_before b USING ("TraceId", "SpanId")
WHERE b."SpanId" IS NULL OR s.run_id IS DISTINCT FROM b.run_id OR s.step IS DISTINCT FROM b.step"""
_WRITTEN_SQL = "SELECT s.* " + _CHANGED.format(join="LEFT JOIN")
_CHANGED_SQL = 'SELECT concat(s."TraceId", \'/\', s."SpanId") ' + _CHANGED.format(join="JOIN")


def _keys(table: pa.Table) -> pa.Array:
    return pc.binary_join_element_wise(table.column("TraceId"), table.column("SpanId"), "/")


def store_batch(con: ClickHouseConnection, table: pa.Table) -> int:
    """Stage a normalized batch (spans already held skipped) and queue its traces; the spans staged."""
    table = unique_spans(table)
    traces = pc.unique(table.column("TraceId")).to_pylist()
    if not traces:
        return 0
    known = con.execute(_HELD, {"t": traces}).arrow()
    if known.num_rows:
        table = table.filter(pc.invert(pc.is_in(_keys(table), value_set=_keys(known))))
    if not table.num_rows:
        return 0
    con.insert_arrow("spans_staged", table)
    first = table.group_by("TraceId", use_threads=False).aggregate([("Timestamp", "min")])
    con.insert_arrow(
        "derive_pending", pa.table({"trace_id": first.column("TraceId"), "since": first.column("Timestamp_min")})
    )
    return table.num_rows


def import_exported(
    con: ClickHouseConnection, *, lookback: timedelta = timedelta(hours=6), limits: Limits | None = None
) -> int:
    """Store the ``otel_traces`` rows the exporter wrote since the watermark less ``lookback``; the
    spans stored (none before the exporter has created its table)."""
    source = con.url.table
    if not exported(con):
        return 0
    (mark, floor) = con.execute(
        "SELECT toUnixTimestamp64Nano(max(watermark)), toUnixTimestamp64Nano(max(retained_before)) FROM loopsight_import"
    ).fetchall()[0]
    mark = int(mark or 0)
    start = max(mark - lookback // timedelta(microseconds=1) * 1000, 0) if mark else 0
    start = max(start, int(floor or 0))  # never what retention deleted
    stored, newest = 0, mark
    while True:
        rows = con.execute(
            f"SELECT * FROM {source} WHERE Timestamp >= fromUnixTimestamp64Nano({{since:Int64}}) "
            "AND (TraceId, SpanId) NOT IN (SELECT TraceId, SpanId FROM spans "
            "WHERE Timestamp >= fromUnixTimestamp64Nano({since:Int64}) UNION ALL SELECT TraceId, SpanId FROM spans_staged) "
            "ORDER BY Timestamp LIMIT {n:UInt64}",
            {"since": start, "n": IMPORT_ROWS},
        ).arrow()
        if not rows.num_rows:
            break
        stored += store_batch(con, to_arrow(otel_traces_rows(rows, limits)))
        latest = pc.max(rows.column("Timestamp").cast(pa.int64())).as_py()
        newest = max(newest, latest)
        if rows.num_rows < IMPORT_ROWS:
            break
        start = latest
    if newest != mark:
        con.execute(
            "INSERT INTO loopsight_import (watermark) VALUES (fromUnixTimestamp64Nano({w:Int64}))", {"w": newest}
        )
    return stored


def _scratch(**rows: pa.Table) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB holding the model's tables, those named filled with ``rows``."""
    scratch = duckdb.connect()
    for table in TABLES:
        scratch.execute(duckdb_ddl(table))
    for table, data in rows.items():
        scratch.register("fetched", data)
        scratch.execute(f"INSERT INTO {table} BY NAME SELECT * FROM fetched")
        scratch.unregister("fetched")
    return scratch


def reprice(con: ClickHouseConnection, prices: PriceBook | None = None) -> int:
    """Rewrite ``model_prices`` for every (provider, model) pair ``run_calls`` holds (a writer
    opening: prices apply to history, as on DuckDB), and when that changes a stored call's price
    (or calls have none stored yet), the stored costs (:func:`_recost`); the pairs priced."""
    from loopsight.prices import default_book

    pairs = [tuple(r) for r in con.execute("SELECT DISTINCT provider, model FROM run_calls").fetchall()]
    rows = price_rows(prices or default_book(), pairs)
    stored = _scratch(model_prices=con.execute("SELECT * FROM model_prices").arrow())
    try:
        changed = prices_changed(stored, rows)
    finally:
        stored.close()
    if changed or con.execute(COSTS_MISSING_SQL).fetchall()[0][0]:
        _recost(con, rows)  # before the prices: a reprice cut short is done again at the next open
    con.command("TRUNCATE TABLE model_prices")
    if rows.num_rows:
        con.insert_arrow("model_prices", rows)
    return len(pairs)


def _recost(con: ClickHouseConnection, prices: pa.Table) -> None:
    """Price every stored call and run again with the ``model_prices`` rows ``prices``
    (:func:`loopsight.stores.derive.recost`, in an in-memory DuckDB), then put each table's new
    rows in its place at once (``EXCHANGE TABLES``: readers see the old costs or the new)."""
    fetched = {table: con.execute(f"SELECT * FROM {table}").arrow() for table in ("run_calls", "run_facts")}
    scratch = _scratch(model_prices=prices, **fetched)
    try:
        recost(scratch)
        repriced = {table: scratch.sql(f"SELECT * FROM {table}").to_arrow_table() for table in fetched}
    finally:
        scratch.close()
    for table, rows in repriced.items():
        staging = f"{table}_repriced"
        con.command(f"DROP TABLE IF EXISTS {staging}")
        con.command(f"CREATE TABLE {staging} AS {table}")
        if rows.num_rows:
            con.insert_arrow(staging, rows)
        con.command(f"EXCHANGE TABLES {table} AND {staging}")
        con.command(f"DROP TABLE {staging}")


def derive_pending(
    con: ClickHouseConnection,
    *,
    skew: timedelta = timedelta(minutes=5),
    lookback: timedelta = timedelta(hours=6),
    prices: PriceBook | None = None,
    stats: WriterStats | None = None,
) -> int:
    """Derive every pending trace (in groups of :data:`TRACES_PER_PASS`) and write the rows back; the
    traces derived. A group that fails on its data is derived in parts (:mod:`loopsight.stores.isolation`)."""
    micro = timedelta(microseconds=1)
    pending = {
        p["TraceId"]: p for p in con.rows(PENDING_SQL, {"skew_us": skew // micro, "lookback_us": lookback // micro})
    }

    def derive(ids: list[str]) -> None:  # fails, if on the data, in the scratch: before it writes
        part = [pending[t] for t in ids]
        since = min(datetime.fromisoformat(p["since"].rstrip("Z")) for p in part)
        _derive(con, ids, since, prices, [p["TraceId"] for p in part if p["derived"]])

    traces = list(pending)
    for start in range(0, len(traces), TRACES_PER_PASS):
        group = traces[start : start + TRACES_PER_PASS]
        try:
            derive(group)
        except DATA_ERRORS as exc:
            log.error("deriving the per-run tables failed: %s; deriving the pending traces in parts", exc)
            aside = derive_in_parts(group, derive, lambda trace: _set_aside(con, trace), exc)
            if aside is None:
                raise
            if stats is not None:
                stats.failed_derives += 1
                stats.set_aside_traces += len(aside)
    if pending:  # a DELETE only masks rows: the unstaged ones are dropped by a merge (of few rows, live)
        con.command("OPTIMIZE TABLE spans_staged FINAL")
    return len(pending)


def _set_aside(con: ClickHouseConnection, trace: str) -> None:
    """A trace that cannot be derived: its staged spans stored as they came (no run), no longer pending."""
    params = {"t": [trace]}
    con.insert_arrow("spans", con.execute(_UNSTORED, params).arrow())
    con.execute("DELETE FROM derive_pending WHERE trace_id IN {t:Array(String)}", params)
    con.execute("DELETE FROM spans_staged WHERE TraceId IN {t:Array(String)}", params)


def _derive(
    con: ClickHouseConnection,
    ids: list[str],
    since: datetime,
    prices: PriceBook | None,
    derived: list[str],
) -> None:
    """Derive the traces ``ids`` from ``since`` on and write the rows back; ``derived``: those of
    them with derived rows to replace."""
    params = {"t": ids, "s": (since - _EPOCH) // timedelta(microseconds=1)}
    stored = con.execute(f"SELECT * FROM spans WHERE {_SCOPE}", params).arrow()
    staged = con.execute(_UNSTORED, params).arrow()
    spans = pa.concat_tables([stored, staged.select(stored.schema.names).cast(stored.schema)])
    # the store's prices: the calls are priced by the rows readers see (new pairs added to them)
    prices_before = con.execute("SELECT * FROM model_prices").arrow()
    scratch = _scratch(spans=spans, model_prices=prices_before)
    try:
        scratch.register("touched", pa.table({"TraceId": ids}))
        scratch.register("prices_before", prices_before)
        scratch.register("stored_before", stored.select(["TraceId", "SpanId", "run_id", "step"]))
        derive_traces(scratch, since, sessions=False, prices=prices)  # the scratch holds only these traces of a session
        rewritten = {table: scratch.sql(f"SELECT * FROM {table}").to_arrow_table() for table in DERIVED}
        new_prices = scratch.sql("SELECT * FROM model_prices ANTI JOIN prices_before USING (provider, model)")
        rewritten["model_prices"] = new_prices.to_arrow_table()
        # Only the stored spans the pass changed (a run span that came later gives them their run)
        # are deleted and written again; the staged ones are written once.
        rewritten["spans"] = scratch.sql(_WRITTEN_SQL).to_arrow_table()
        replaced_spans = [r[0] for r in scratch.sql(_CHANGED_SQL).fetchall()]
        sessions = [
            r[0]
            for r in scratch.sql("SELECT DISTINCT session_id FROM run_facts WHERE session_id IS NOT NULL").fetchall()
        ]
    finally:
        scratch.close()
    # the pairs the store had no prices for (before the calls: never read unpriced)
    con.insert_arrow("model_prices", rewritten["model_prices"])
    if replaced_spans:
        con.execute(
            f"DELETE FROM spans WHERE {_SCOPE} AND {_KEY} IN {{k:Array(String)}}", params | {"k": replaced_spans}
        )
    con.insert_arrow("spans", rewritten["spans"])
    # A lightweight DELETE marks rows in every part holding one, so it costs more the more is
    # stored: only the traces derived before have rows to replace (run_facts, written first,
    # says which), and a pass of new traces deletes none.
    replaced = {"t": derived, "s": params["s"]}
    for table in DERIVED:
        if derived:
            con.execute(
                f"DELETE FROM {table} WHERE trace_id IN {{t:Array(String)}} AND started_at >= {_SINCE}",
                replaced,
            )
        con.insert_arrow(table, rewritten[table])
    if sessions:
        _derive_sessions(con, sessions)
    con.execute("DELETE FROM derive_pending WHERE trace_id IN {t:Array(String)}", {"t": ids})
    con.execute(  # those now stored only, not waited for (a staged span already stored is read as stored)
        "DELETE FROM spans_staged WHERE TraceId IN {t:Array(String)} AND (TraceId, SpanId) IN "
        f"(SELECT TraceId, SpanId FROM spans WHERE {_SCOPE}) SETTINGS lightweight_deletes_sync = 0",
        params,
    )


def _derive_sessions(con: ClickHouseConnection, sessions: list[str]) -> None:
    """The session-scope loops of ``sessions``, over all their runs' calls (read back from the store)."""
    params = {"s": sessions}
    facts = con.execute("SELECT * FROM run_facts WHERE session_id IN {s:Array(String)}", params).arrow()
    calls = con.execute(
        "SELECT * FROM spans WHERE span_type IN ('llm', 'tool') AND (TraceId, run_id) IN "
        "(SELECT trace_id, run_id FROM run_facts WHERE session_id IN {s:Array(String)})",
        params,
    ).arrow()
    scratch = _scratch(run_facts=facts, spans=calls)
    try:
        scratch.register("derive_sessions", pa.table({"session_id": sessions}))
        session_loops(scratch)
        loops = scratch.sql("SELECT * FROM run_loops").to_arrow_table()
    finally:
        scratch.close()
    con.execute("DELETE FROM run_loops WHERE scope = 'session' AND session_id IN {s:Array(String)}", params)
    con.insert_arrow("run_loops", loops)


def sync(
    con: ClickHouseConnection,
    *,
    limits: Limits | None = None,
    lookback: timedelta = timedelta(hours=6),
    prices: PriceBook | None = None,
) -> int:
    """Import what the exporter wrote and derive every pending trace (what a pass does); the traces derived.

    Example:
        >>> sync(con)  # the exporter wrote otel_traces rows  # doctest: +SKIP
        3
    """
    import_exported(con, lookback=lookback, limits=limits)
    return derive_pending(con, lookback=lookback, prices=prices)


class ClickHouseStore(Queued[Batch]):
    """The collector's ClickHouse store: one thread inserting, importing and deriving."""

    def __init__(
        self,
        con: ClickHouseConnection,
        *,
        max_queue: int = 256,
        max_batch_rows: int = 100_000,
        derive_interval: float = 1.0,
        import_interval: float = 5.0,
        run_lookback: timedelta = timedelta(hours=6),
        barrier_timeout: float = 60.0,
        limits: Limits | None = None,
        prices: PriceBook | None = None,
        **_ignored: Any,
    ) -> None:
        self.path = con.url.redacted()
        self.prices = prices
        self._con = con
        super().__init__(
            WriteQueue(max_queue=max_queue, max_batch_rows=max_batch_rows), Batch, "loopsight-clickhouse-store"
        )
        self._derive_interval = derive_interval
        self._import_interval = import_interval
        self._lookback = run_lookback
        self._barrier_timeout = barrier_timeout
        self._limits = limits
        self.stats = WriterStats()
        self._next_import = 0.0
        self._due: float | None = None  # when the next pass runs (None: nothing stored since the last)
        self._thread.start()

    @classmethod
    def open(cls, url: StoreURL, **kwargs: Any) -> ClickHouseStore:
        """Connect, apply loopsight's ClickHouse migrations and start the store's thread."""
        try:
            con = connect(url)
            upgrade(con)
            reprice(con, kwargs.get("prices"))
        except ClickHouseError as exc:
            raise StoreError(str(exc)) from None
        return cls(con, **kwargs)

    @staticmethod
    def delete_before(con: ClickHouseConnection, cutoff: datetime, chunk: int) -> int:
        """Retention, one job (lightweight DELETEs mark rows: no chunks): the spans that started
        before ``cutoff`` and the derived rows of the runs that did, and the import starts at ``cutoff``
        from now on (:data:`~loopsight.stores.clickhouse_ddl.RETENTION_FLOOR`); the spans deleted."""
        at, before = {"c": cutoff}, "< {c:DateTime64(6, 'UTC')}"
        ((deleted,),) = con.execute(f"SELECT count() FROM spans WHERE Timestamp {before}", at).fetchall()
        # first: the import, which re-reads a look-back of otel_traces, brings none of them back
        con.execute("INSERT INTO loopsight_import (retained_before) VALUES ({c:DateTime64(6, 'UTC')})", at)
        for table in ("spans", "spans_staged", *DERIVED):
            con.execute(f"DELETE FROM {table} WHERE {'started_at' if table in DERIVED else 'Timestamp'} {before}", at)
        return int(deleted)

    def size_bytes(self) -> int:
        """Bytes on disk of this database's tables (0 when the server does not say)."""
        try:
            rows = self._con.execute(
                "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = currentDatabase()"
            ).fetchall()
        except ClickHouseError:
            return 0
        return int(rows[0][0] or 0)

    def secret_key(self) -> bytes:
        """This store's secret key, kept in ``loopsight_secret`` (the first written wins)."""
        self._con.execute(
            "INSERT INTO loopsight_secret (key) SELECT {k:String} WHERE (SELECT count() FROM loopsight_secret) = 0",
            {"k": os.urandom(KEY_BYTES).hex()},
        )
        found = self._con.execute("SELECT key FROM loopsight_secret ORDER BY created_at, key LIMIT 1").fetchall()
        return bytes.fromhex(found[0][0])

    def reader(self) -> ClickHouseConnection:
        """A connection whose derived tables cover every batch acknowledged so far (waits for a pass)."""
        self.drain(self._barrier_timeout)
        return self._con.cursor()

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every batch acknowledged so far is derived (a pass queued after them); False on timeout."""
        if threading.current_thread() is self._thread or self._due is None:
            return True
        try:
            self.run_job(lambda con: self._pass()).result(timeout)
        except TimeoutError:
            return False
        except StoreError:  # closed: what was queued is derived already
            pass
        return True

    def close(self) -> None:
        """Store what is queued, derive it, stop the thread."""
        if self._stop():
            self._con.close()

    def _wait(self) -> float:
        due = self._next_import if self._due is None else min(self._next_import, self._due)
        return max(0.0, due - time.monotonic())

    def _work(self, work: Callable[[ClickHouseConnection], Any]) -> Any:
        return work(self._con)

    def _commit(self, batches: list[Batch]) -> None:
        commit(
            batches, lambda b: store_batch(self._con, pa.concat_tables([x.table for x in b])), self.stats, self._stored
        )

    def _stored(self, inserted: int) -> None:
        if self._due is None:  # set before the batches are answered: a reader asking after waits for the pass
            self._due = time.monotonic() + self._derive_interval

    def _between(self, stop: bool) -> None:
        now = time.monotonic()
        if stop or now >= self._next_import:
            self._guarded(lambda: import_exported(self._con, lookback=self._lookback, limits=self._limits))
            self._next_import = now + self._import_interval
            self._due = now if self._due is None else self._due
        if stop or (self._due is not None and now >= self._due):
            self._pass()

    def _pass(self) -> None:
        if self._due is None:  # nothing stored or imported since the last
            return
        started = time.perf_counter()
        if self._guarded(
            lambda: derive_pending(self._con, lookback=self._lookback, prices=self.prices, stats=self.stats)
        ):
            self.stats.record_derive(time.perf_counter() - started)
        else:
            self.stats.failed_derives += 1
        self._due = None

    def _guarded(self, work: Callable[[], Any]) -> bool:
        """Run a pass or an import; a failure is logged and retried by the next one."""
        try:
            work()
        except Exception as exc:
            log.error("ClickHouse import or derive pass failed (retried by the next): %s", exc)
            return False
        return True
