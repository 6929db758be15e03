"""The run index on ClickHouse: each span's ``run_id``, stored once instead of resolved per query.

``run_id`` (the top-most ``invoke_agent`` span above a span) needs the whole trace, so
resolving it inside the ``spans`` view made every question walk every trace. Instead
``loopsight_run_index`` (``TraceId, SpanId, run_id``; ReplacingMergeTree on ``indexed_at``)
holds it (and the step derived for producers that give none, as the DuckDB writer derives
it) and the view joins it. It is kept up to date incrementally:

- :func:`index_traces` re-resolves the given traces (the loopsight ClickHouse writer calls it
  for the traces of every batch it inserts);
- :func:`index_new_spans` finds spans not in the index yet (written by the OpenTelemetry
  Collector's exporter, or whose run span arrived late) among spans newer than the stored
  watermark minus ``lookback``, and re-resolves their whole traces. Readers call
  :func:`refresh` (throttled) before they query, so the dashboard, query API and alerts see
  exporter-written spans without a separate daemon.

A span stays without ``run_id`` until the indexer has seen it (the same eventual
consistency as the DuckDB store while a run span has not arrived); a span arriving with a
start time older than ``watermark - lookback`` is not picked up (default lookback 6 h).

Example:
    >>> from loopsight.stores.clickhouse import connect_chdb
    >>> con = connect_chdb("/tmp/loopsight-doc-ch")  # doctest: +SKIP
    >>> index_new_spans(con)  # doctest: +SKIP
    1204
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from loopsight.stores.clickhouse import ClickHouseConnection, ClickHouseError

log = logging.getLogger("loopsight.stores")

DEFAULT_LOOKBACK = timedelta(hours=6)
REFRESH_SECONDS = 5.0

INDEX_TABLE = """CREATE TABLE IF NOT EXISTS loopsight_run_index (
    TraceId String CODEC(ZSTD(1)),
    SpanId String CODEC(ZSTD(1)),
    run_id Nullable(String) CODEC(ZSTD(1)),
    step Nullable(Int64) CODEC(ZSTD(1)),
    indexed_at DateTime64(6) DEFAULT now64(6)
) ENGINE = ReplacingMergeTree(indexed_at)
ORDER BY (TraceId, SpanId)"""

STATE_TABLE = """CREATE TABLE IF NOT EXISTS loopsight_run_index_state (
    watermark DateTime64(9),
    updated_at DateTime64(6) DEFAULT now64(6)
) ENGINE = MergeTree ORDER BY updated_at"""


def _resolve_sql(table: str, where: str) -> str:
    # Per trace: each span's parent position, then a walk up (self first) keeping the
    # highest invoke_agent seen, at most 64 hops as on DuckDB. Then, as the DuckDB writer
    # does for traces holding model/tool calls without a step: a model call's step is its
    # rank among the run's model calls, a tool call's that of the last model call begun before it.
    return f"""INSERT INTO loopsight_run_index (TraceId, SpanId, run_id, step)
{resolve_select(table, where)}"""


def runs_select(source: str) -> str:
    """``TraceId, SpanId, run_id`` of every span of ``source`` (a table or CTE with ``TraceId,
    SpanId, ParentSpanId, span_type``): the walk up each trace's parent chain, self first,
    keeping the highest ``invoke_agent``, at most 64 hops as on DuckDB."""
    return f"""SELECT TraceId, ids[i] AS SpanId, if(run_at = 0, NULL, ids[run_at]) AS run_id
FROM (
    SELECT TraceId, ids,
           arrayMap(i -> arrayFold(
               (acc, hop) -> if(acc.1 = 0, acc, (parent_at[acc.1], if(agents[acc.1], acc.1, acc.2))),
               range(64), (toUInt64(i), toUInt64(0))).2, arrayEnumerate(ids)) AS runs_at
    FROM (
        SELECT TraceId, groupArray(SpanId) AS ids, groupArray(span_type = 'agent') AS agents,
               arrayMap(p -> toUInt64(indexOf(ids, p)), groupArray(ParentSpanId)) AS parent_at
        FROM {source}
        GROUP BY TraceId
    )
)
ARRAY JOIN arrayEnumerate(ids) AS i, runs_at AS run_at"""


def resolve_select(table: str, where: str) -> str:
    """The SELECT behind the index: ``TraceId, SpanId, run_id, step`` of the spans of ``table`` matching ``where``.

    ``step`` is derived, as the DuckDB writer's ``DERIVE_STEPS_SQL`` does, only for model and
    tool calls without one: a model call's step is its rank among the run's model calls, a
    tool call's that of the last model call begun before it. An llm span under llm spans
    (another instrumentation's chat span inside our model call) is part of that call: it takes
    the step of its top-most llm ancestor and is not ranked itself.
    """
    return f"""WITH picked AS (
    SELECT TraceId, SpanId, any(ParentSpanId) AS ParentSpanId, any(loopsight_span_type) AS span_type,
           any(loopsight_step) AS step, min(Timestamp) AS ts
    FROM {table} WHERE {where}
    GROUP BY TraceId, SpanId
),
resolved AS (
{runs_select("picked")}),
tops AS (
    -- each llm span's top-most llm ancestor through llm parents (itself when its parent is not an llm span)
    SELECT TraceId, ids[i] AS SpanId, ids[top_at] AS top_id
    FROM (
        SELECT TraceId, ids, llm,
               arrayMap(i -> arrayFold((acc, hop) -> if(parent_at[acc] != 0 AND llm[parent_at[acc]], parent_at[acc], acc),
                                       range(64), toUInt64(i)), arrayEnumerate(ids)) AS tops_at
        FROM (
            SELECT TraceId, groupArray(SpanId) AS ids, groupArray(span_type = 'llm') AS llm,
                   arrayMap(p -> toUInt64(indexOf(ids, p)), groupArray(ParentSpanId)) AS parent_at
            FROM picked
            WHERE TraceId IN (SELECT TraceId FROM picked WHERE span_type IN ('llm', 'tool') AND step IS NULL)
            GROUP BY TraceId
        )
    )
    ARRAY JOIN arrayEnumerate(ids) AS i, tops_at AS top_at
    WHERE llm[i]
),
calls AS (
    SELECT r.TraceId AS TraceId, r.SpanId AS SpanId, assumeNotNull(r.run_id) AS run_id, p.span_type AS span_type, p.ts AS ts,
           p.step AS step
    FROM resolved r JOIN picked p ON p.TraceId = r.TraceId AND p.SpanId = r.SpanId
    WHERE p.span_type IN ('llm', 'tool') AND r.run_id IS NOT NULL
      AND r.TraceId IN (SELECT TraceId FROM picked WHERE span_type IN ('llm', 'tool') AND step IS NULL)
),
llm AS (
    SELECT c.TraceId AS TraceId, c.SpanId AS SpanId, c.run_id AS run_id, c.ts AS ts, c.step AS step,
           toInt64(row_number() OVER (PARTITION BY c.TraceId, c.run_id ORDER BY c.ts, c.SpanId) - 1) AS n
    FROM calls c JOIN tops t ON t.TraceId = c.TraceId AND t.SpanId = c.SpanId
    WHERE c.span_type = 'llm' AND t.top_id = c.SpanId
),
numbered AS (
    SELECT TraceId, SpanId, n AS step FROM llm
    UNION ALL
    SELECT t.TraceId, t.SpanId, coalesce(l.step, l.n)
    FROM tops t JOIN llm l ON l.TraceId = t.TraceId AND l.SpanId = t.top_id
    WHERE t.top_id != t.SpanId
    UNION ALL
    SELECT c.TraceId, c.SpanId, coalesce(l.n, toInt64(0))
    FROM (SELECT * FROM calls WHERE span_type = 'tool') c
    ASOF LEFT JOIN llm l ON c.TraceId = l.TraceId AND c.run_id = l.run_id AND c.ts >= l.ts
)
SELECT r.TraceId, r.SpanId, r.run_id, if(p.step IS NULL, n.step, NULL)
FROM resolved r
JOIN picked p ON p.TraceId = r.TraceId AND p.SpanId = r.SpanId
LEFT JOIN numbered n ON n.TraceId = r.TraceId AND n.SpanId = r.SpanId
SETTINGS join_use_nulls = 1"""


def index_traces(con: ClickHouseConnection, trace_ids: Iterable[str]) -> int:
    """Re-resolve ``run_id`` for every span of ``trace_ids``, rewrite their ``loopsight_spans`` rows and their loops; returns how many traces.

    Example:
        >>> index_traces(con, ["4bf92f3577b34da6a3ce929d0e0e4736"])  # doctest: +SKIP
        1
    """
    from loopsight.stores.clickhouse_schema import typed_spans_insert

    ids = sorted({t for t in trace_ids if t})
    for start in range(0, len(ids), 10_000):
        chunk = ids[start : start + 10_000]
        con.execute(_resolve_sql(con.url.table, "TraceId IN {ids:Array(String)}"), {"ids": chunk})
        con.execute(typed_spans_insert(con.url.table, "TraceId IN {ids:Array(String)}"), {"ids": chunk})
        derive_runs(con, chunk)
    return len(ids)


def derive_runs(con: ClickHouseConnection, trace_ids: list[str]) -> None:
    """Store the per-run facts of ``trace_ids``: their loops (``loops_core.sql``) in
    ``loopsight_run_loops``, their tokens per step (``burn_steps.sql``) in ``loopsight_run_steps``
    and their run members (``stalls_members.sql``) in ``loopsight_run_members``.

    The loop, burn and stall questions then read these rows (``loops_derived.sql``,
    ``burn_steps_derived.sql``, ``stalls_members_derived.sql``) instead of deriving them over
    every run in scope, as the DuckDB writer keeps its derived tables.
    """
    from loopsight.analytics.sql import dialect_file

    statements = [
        f"INSERT INTO {table} " + dialect_file("clickhouse", name)
        for table, name in (
            ("loopsight_run_loops", "loops_derive"),
            ("loopsight_run_steps", "steps_derive"),
            ("loopsight_run_members", "stalls_derive"),
        )
    ]
    for start in range(0, len(trace_ids), 10_000):
        params = {
            "traces": trace_ids[start : start + 10_000],
            "since": None,
            "until": None,
            "agent": None,
            "service": None,
        }
        for sql in statements:
            con.execute(sql, params)


def watermark(con: ClickHouseConnection) -> Any:
    """The newest span start the indexer has covered (``None`` before its first pass)."""
    row = con.execute("SELECT max(watermark), count() FROM loopsight_run_index_state").fetchall()[0]
    return row[0] if row[1] else None


def index_new_spans(con: ClickHouseConnection, lookback: timedelta = DEFAULT_LOOKBACK) -> int:
    """Index the traces holding spans missing from the index; returns how many traces.

    Only spans starting after ``watermark - lookback`` are looked at (all spans on the
    first pass), so a pass costs in proportion to recent traffic.

    Example:
        >>> index_new_spans(con, lookback=timedelta(hours=1))  # doctest: +SKIP
        37
    """
    table = con.url.table
    mark = watermark(con)
    since = None if mark is None else mark - lookback
    (newest,) = con.execute(
        f"SELECT max(Timestamp) FROM {table} WHERE isNull({{since:Nullable(DateTime64(9))}}) OR Timestamp >= {{since:Nullable(DateTime64(9))}}",
        {"since": since},
    ).fetchall()[0]
    traces = [
        row[0]
        for row in con.execute(
            f"""SELECT DISTINCT TraceId FROM {table}
WHERE (isNull({{since:Nullable(DateTime64(9))}}) OR Timestamp >= {{since:Nullable(DateTime64(9))}})
  AND (TraceId, SpanId) NOT IN (
      SELECT TraceId, SpanId FROM loopsight_run_index
      WHERE TraceId IN (SELECT TraceId FROM {table}
                        WHERE isNull({{since:Nullable(DateTime64(9))}}) OR Timestamp >= {{since:Nullable(DateTime64(9))}}))""",
            {"since": since},
        ).fetchall()
    ]
    index_traces(con, traces)
    if newest is not None and newest.year > 1970 and (mark is None or newest > mark):
        con.execute("INSERT INTO loopsight_run_index_state (watermark) VALUES ({w:DateTime64(9)})", {"w": newest})
    return len(traces)


_LAST: dict[int, float] = {}
_WARNED: set[int] = set()
_LOCK = threading.Lock()


def refresh(con: ClickHouseConnection, every: float = REFRESH_SECONDS) -> bool:
    """Run :func:`index_new_spans` unless it ran less than ``every`` seconds ago for this engine.

    Called by :func:`loopsight.analytics.sql.query` before a ClickHouse question; returns
    whether a pass ran. A store the reader may not write to (a read-only ClickHouse user)
    is logged once and read as it is.
    """
    key = id(con._engine)
    now = time.monotonic()
    with _LOCK:
        if now - _LAST.get(key, float("-inf")) < every:
            return False
        _LAST[key] = now
    try:
        index_new_spans(con)
    except ClickHouseError as exc:
        # A read-only user cannot maintain the index: answer from it as it is, and say so once.
        if key not in _WARNED:
            _WARNED.add(key)
            log.warning(
                "cannot update the run index on %s (%s); runs written since its last update read as unassigned",
                con.url.redacted(),
                exc,
            )
        return False
    return True
