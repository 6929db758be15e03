"""The derivation: what a run is, its steps, and the per-run tables, from the stored spans.

Everything computed from more than one span is derived here, in SQL over a DuckDB connection,
for a set of traces at once: the collector's DuckDB file (its deriver thread, see
:mod:`loopsight.stores.duckdb_deriver`) and, for ClickHouse, an in-memory DuckDB holding the
traces' spans (:mod:`loopsight.stores.clickhouse_store`), so both engines hold the same rows.

For the traces of the registered relation ``touched`` (``TraceId``), reading spans that started
at or after ``since``:

- ``run_id`` of every span: the top-most agent span above it (:data:`loopsight.vocabulary.RUN`).
  Run spans usually arrive after their children, so spans stored earlier are updated when their
  run arrives;
- ``step`` where the producer gave none (:data:`loopsight.vocabulary.STEP`);
- the per-run tables (:data:`TABLES`): ``run_facts`` (rollups, ``derive_runs.sql``), ``run_loops``
  (``loops_core.sql``), ``run_steps`` (input tokens per step, ``burn_steps.sql``), ``run_growth``
  (growth-fit sums, ``burn_growth.sql``), ``run_members`` (per-span stall facts,
  ``stalls_members.sql``), ``run_step_totals`` (per step what the run had spent,
  ``step_totals.sql``) and ``run_calls`` (each model call's tokens, ``run_calls.sql``, and its
  cost, ``call_costs.sql``; each run's sums in ``run_facts``): each rule's SQL run with ``spans``
  shadowed by the spans in scope;
- ``model_prices`` rows for the (provider, model) pairs in scope it lacks, from the
  :class:`~loopsight.prices.PriceBook` given, before the calls are priced (:func:`price_models`;
  :func:`reprice` rewrites them all, and prices the stored calls and runs again when they change).

Only the derived rows of runs that started at or after ``since`` are replaced: a run longer than
the look-back keeps its earlier facts.

Example:
    >>> con.register("touched", arrow_table_with_TraceId)  # doctest: +SKIP
    >>> derive_traces(con, since=datetime(2026, 1, 1))  # doctest: +SKIP
    >>> refresh(con)  # every trace: a backfill  # doctest: +SKIP
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb
import pyarrow as pa

from loopsight.ingest.features import NEAR_PARAMETERS
from loopsight.model import DERIVED, MODEL_PRICES
from loopsight.prices import PriceBook, default_book
from loopsight.stores.sqlfiles import DERIVE

# Per pending trace, the earliest start a pass must read from: its new spans or its known
# runs (a run span starts before its children), less the skew margin, bounded by the look-back;
# and whether it has derived rows from ``since`` on (``derived``: a run of it is in run_facts
# there, which a pass writes first), which a store that deletes before it inserts must replace.
PENDING_SQL = """
SELECT p.trace_id AS "TraceId",
       greatest(least(min(p.since), min(f.started_at)) - INTERVAL ($skew_us::BIGINT) MICROSECOND,
                min(p.since) - INTERVAL ($lookback_us::BIGINT) MICROSECOND) AS since,
       count(f.trace_id) > 0 AS derived
FROM derive_pending p
LEFT JOIN run_facts f
       ON f.trace_id = p.trace_id AND f.started_at >= (SELECT min(since) FROM derive_pending) - INTERVAL ($lookback_us::BIGINT) MICROSECOND
GROUP BY p.trace_id
"""

# loopsight.vocabulary.RUN: the top-most agent span; in a trace without one that holds model or
# tool calls, its root.
RESOLVE_RUNS_SQL = """
WITH RECURSIVE scoped AS (
    SELECT "TraceId" AS tid, "SpanId" AS sid, "ParentSpanId" AS pid, span_type
    FROM spans
    WHERE "Timestamp" >= $since AND "TraceId" IN (SELECT "TraceId" FROM touched)
),
t AS (
    SELECT tid, sid, pid,
           span_type = 'agent'
           OR (pid = '' AND NOT bool_or(span_type = 'agent') OVER w AND bool_or(span_type = 'llm') OVER w)
               AS is_agent
    FROM scoped
    WINDOW w AS (PARTITION BY tid)
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
# span under an llm span (an instrumentor's chat span inside our model call) or under a tool
# span (a tool that summarises with a model) is part of that call: it takes the step of its
# top-most llm or tool ancestor and is not numbered itself, as the decorators number it.
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
    WHERE c.span_type = 'llm' AND p.span_type IN ('llm', 'tool')
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
tools AS (
    SELECT c.tid, c.sid, coalesce(c.step, l.n, 0) AS step FROM calls c
    ASOF LEFT JOIN llm l ON c.tid = l.tid AND c.run_id = l.run_id AND c.ts >= l.ts
    WHERE c.span_type = 'tool'
),
numbered AS (
    SELECT tid, sid, n AS new_step FROM llm
    UNION ALL
    SELECT t.tid, t.sid, coalesce(l.step, l.n) FROM top_llm t JOIN llm l ON l.tid = t.tid AND l.sid = t.anc
    UNION ALL
    SELECT t.tid, t.sid, o.step FROM top_llm t JOIN tools o ON o.tid = t.tid AND o.sid = t.anc
    UNION ALL
    SELECT tid, sid, step FROM tools
)
UPDATE spans SET step = numbered.new_step
FROM numbered
WHERE spans."Timestamp" >= $since AND spans."TraceId" = numbered.tid AND spans."SpanId" = numbered.sid
  AND spans.step IS NULL
"""


TABLES = DERIVED

_COLUMNS = (
    '"Timestamp", "TraceId", "SpanId", span_type, run_id, step, tool, args_hash, error_type, '
    'loop_kind, input_tokens, output_tokens, agent, "ServiceName", "StatusCode", "Duration", termination_reason, attempts, '
    '"SpanName", "ParentSpanId", end_time, "Events", session_id, provider, model, cache_read_tokens, cache_write_tokens, '
    # the attributes of agent spans only (few, and the run rules read their budget)
    "result_hash, args_frame, args_text_fp, args_words, args_ents, args_vec, args_vec_norm, ingested_at, "
    'CASE WHEN span_type = \'agent\' THEN "SpanAttributes" END AS "SpanAttributes"'
)

_NO_FILTERS = {"since": None, "until": None, "agent": None, "service": None}

# The runs in scope with the columns run_growth repeats (the values run_facts holds for them):
# joined instead of run_facts, which would be scanned whole for a handful of runs.
_SCOPE_RUNS = (
    '(SELECT "TraceId" AS trace_id, "SpanId" AS run_id, agent, "ServiceName" AS service, "Timestamp" AS started_at '
    "FROM derive_scope WHERE span_type = 'agent' AND \"SpanId\" = run_id)"
)


# Each run's stored cost in run_facts: the sums of its priced calls (``{calls}``: run_calls rows with
# prices); ``cost_usd`` NULL when none is priced, never 0. Callers may narrow the runs with ``AND ...``.
RUN_COSTS_SQL = (
    "UPDATE run_facts SET cost_usd = k.cost_usd, cache_saved_usd = k.cache_saved_usd, "
    "unpriced_calls = k.unpriced_calls FROM ("
    "SELECT trace_id, run_id, sum(cost_usd) AS cost_usd, sum(cache_saved_usd) AS cache_saved_usd, "
    "count(*) FILTER (WHERE NOT priced) AS unpriced_calls FROM {calls} GROUP BY trace_id, run_id) k "
    "WHERE run_facts.trace_id = k.trace_id AND run_facts.run_id = k.run_id"
)


def _shadowed(name: str) -> str:
    """``sql/<name>.sql`` reading ``spans`` from the scope table instead of the stored spans."""
    return DERIVE.compose(name, inline=True, spans="derive_scope")


def refresh(
    con: duckdb.DuckDBPyConnection,
    *,
    since: datetime | None = None,
    tables: tuple[str, ...] = TABLES,
    sessions: bool = True,
    prices: PriceBook | None = None,
) -> None:
    """Recompute the derived rows of the runs in scope, in the caller's transaction (which
    the caller rolls back on an error).

    With ``since`` the scope is the traces of the registered relation ``touched`` (a
    ``TraceId`` column), reading spans that started at or after ``since``; without it every
    stored span (the backfill). ``tables`` limits the work to some of :data:`TABLES` (a
    migration fills the tables it creates). With ``sessions`` the session-scope loops of the
    sessions in scope are found again too (:func:`session_loops`; a store whose connection holds
    only some of a session's traces does that itself). The model pairs in scope that
    ``model_prices`` lacks are priced from ``prices`` (default: :func:`loopsight.prices.default_book`).
    """
    # Every rule reads only spans that belong to a run: children whose run span has not
    # arrived yet are skipped until it does (then the whole trace is in scope again).
    if since is None:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE derive_scope AS SELECT {_COLUMNS} FROM main.spans WHERE run_id IS NOT NULL"
        )
    else:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE derive_scope AS SELECT {_COLUMNS} FROM main.spans "
            'WHERE "Timestamp" >= $since AND run_id IS NOT NULL AND "TraceId" IN (SELECT "TraceId" FROM touched)',
            {"since": since},
        )
    # the pairs new to model_prices first: the calls are priced as they are stored
    price_models(con, prices)
    _fill(con, since, tables)
    if "run_loops" in tables and sessions:
        # the sessions the scope's spans name are those of its runs (derive_runs.sql takes the run's from them)
        con.execute(
            "CREATE OR REPLACE TEMP TABLE derive_sessions AS "
            "SELECT DISTINCT session_id FROM derive_scope WHERE session_id IS NOT NULL"
        )
        if con.execute("SELECT count(*) FROM derive_sessions").fetchall()[0][0]:
            session_loops(con)
    # Only after success: on an error the caller rolls back, which drops these temp tables
    # too, and a DROP in the aborted transaction would fail and hide what went wrong.
    con.execute("DROP TABLE IF EXISTS derive_sessions")
    con.execute("DROP TABLE IF EXISTS derive_scope")
    con.execute("DROP TABLE IF EXISTS derive_steps")
    con.execute("DROP TABLE IF EXISTS derive_calls")


def _fill(con: duckdb.DuckDBPyConnection, since: datetime | None, tables: tuple[str, ...]) -> None:
    """Replace the derived rows of the runs in ``derive_scope`` (see :func:`refresh`)."""
    if since is None:
        for table in tables:
            con.execute(f"DELETE FROM {table}")
    else:
        if not con.execute("SELECT count(*) FROM derive_scope").fetchall()[0][0]:
            return  # a trace with derived rows since ``since`` has run members in scope
        for table in tables:
            con.execute(
                f'DELETE FROM {table} WHERE started_at >= $since AND trace_id IN (SELECT "TraceId" FROM derive_scope)',
                {"since": since},
            )
    if "run_facts" in tables:  # its costs below, once the calls are priced (run_calls.sql reads run_facts)
        con.execute(f"INSERT INTO run_facts BY NAME SELECT *, 0 AS unpriced_calls FROM ({_shadowed('derive_runs')})")
    if "run_calls" in tables:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE derive_calls AS SELECT * FROM ({_shadowed('call_costs')})", _NO_FILTERS
        )
        con.execute("INSERT INTO run_calls BY NAME SELECT * FROM derive_calls")
    if "run_facts" in tables:
        calls = "derive_calls" if "run_calls" in tables else "run_calls"
        con.execute(
            RUN_COSTS_SQL.format(calls=calls) + " AND ($since::TIMESTAMP IS NULL OR run_facts.started_at >= $since) "
            'AND run_facts.trace_id IN (SELECT "TraceId" FROM derive_scope)',
            {"since": since},
        )
    if "run_loops" in tables:
        con.execute(
            f"INSERT INTO run_loops BY NAME SELECT * FROM ({_shadowed('loops_core')})",
            {**_NO_FILTERS, **NEAR_PARAMETERS},
        )
    if "run_steps" in tables or "run_growth" in tables:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE derive_steps AS SELECT * FROM ({_shadowed('burn_steps')})", _NO_FILTERS
        )
    if "run_steps" in tables:
        con.execute("INSERT INTO run_steps BY NAME SELECT * FROM derive_steps")
    if "run_growth" in tables:
        growth = DERIVE.compose("burn_growth", burn_steps="derive_steps")
        con.execute(
            "INSERT INTO run_growth BY NAME SELECT g.* EXCLUDE (agent), f.agent, f.service, f.started_at "
            f"FROM ({growth}) g JOIN {_SCOPE_RUNS} f ON f.trace_id = g.trace_id AND f.run_id = g.run_id"
        )
    if "run_members" in tables:
        con.execute(f"INSERT INTO run_members BY NAME SELECT * FROM ({_shadowed('stalls_members')})", _NO_FILTERS)
    if "run_step_totals" in tables:
        con.execute(f"INSERT INTO run_step_totals BY NAME SELECT * FROM ({_shadowed('step_totals')})", _NO_FILTERS)


def session_loops(con: duckdb.DuckDBPyConnection) -> None:
    """Replace the session-scope loops of the sessions in the relation ``derive_sessions``
    (``session_id``): the loop rules over each session's runs in start order, read from the
    stored spans and ``run_facts`` of those runs (a loop no single run shows)."""
    con.execute(
        "DELETE FROM run_loops WHERE scope = 'session' AND session_id IN (SELECT session_id FROM derive_sessions)"
    )
    con.execute(
        f"INSERT INTO run_loops BY NAME SELECT * FROM ({DERIVE.compose('loops_core', runs='loop_session_runs')})",
        NEAR_PARAMETERS,
    )


_PRICE_SCHEMA = pa.schema(
    [
        (
            c.name,
            {"VARCHAR": pa.string(), "TIMESTAMP": pa.timestamp("us"), "BIGINT": pa.int64(), "DOUBLE": pa.float64()}[
                c.type
            ],
        )
        for c in MODEL_PRICES
    ]
)


def price_rows(prices: PriceBook, pairs: list[tuple[Any, Any]]) -> pa.Table:
    """The ``model_prices`` rows of ``pairs`` as an Arrow table (the stores insert it as is)."""
    return pa.Table.from_pylist(prices.rows(pairs), schema=_PRICE_SCHEMA)


def price_models(con: duckdb.DuckDBPyConnection, prices: PriceBook | None = None) -> int:
    """Add ``model_prices`` rows for the (provider, model) pairs of the model calls in
    ``derive_scope`` that it has none for; the pairs added."""
    pairs = con.execute(
        "SELECT DISTINCT coalesce(s.provider, '') AS provider, coalesce(s.model, '') AS model FROM derive_scope s "
        "WHERE s.span_type = 'llm' AND (s.input_tokens IS NOT NULL OR s.output_tokens IS NOT NULL) "
        "AND NOT EXISTS (SELECT 1 FROM model_prices p WHERE p.provider = coalesce(s.provider, '') "
        "AND p.model = coalesce(s.model, ''))"
    ).fetchall()
    if pairs:
        _insert_prices(con, price_rows(prices or default_book(), pairs))
    return len(pairs)


def reprice(con: duckdb.DuckDBPyConnection, prices: PriceBook | None = None) -> int:
    """Rewrite ``model_prices`` for every pair ``run_calls`` holds, in the caller's transaction (a
    writer opening: prices apply to history), and when that changes a stored call's price (or a
    call has none stored yet), price every stored call and run again (:func:`recost`); the pairs
    priced."""
    pairs = con.execute("SELECT DISTINCT provider, model FROM run_calls").fetchall()
    rows = price_rows(prices or default_book(), pairs)
    changed = prices_changed(con, rows) or costs_missing(con)
    con.execute("DELETE FROM model_prices")
    _insert_prices(con, rows)
    if changed:
        recost(con)
    return len(pairs)


_PRICE_COLUMNS = ", ".join(c.name for c in MODEL_PRICES)

# The stored price rows of the pairs ``new_prices`` holds that it does not, and its rows that are not
# stored: none when the calls stored are priced as they would be now (a pair only stored is not read).
_PRICES_CHANGED_SQL = f"""
SELECT count(*) FROM (
    (SELECT {_PRICE_COLUMNS} FROM model_prices s
     WHERE EXISTS (SELECT 1 FROM new_prices n WHERE n.provider = s.provider AND n.model = s.model)
     EXCEPT ALL SELECT {_PRICE_COLUMNS} FROM new_prices)
    UNION ALL
    (SELECT {_PRICE_COLUMNS} FROM new_prices EXCEPT ALL SELECT {_PRICE_COLUMNS} FROM model_prices)
)
"""


def prices_changed(con: duckdb.DuckDBPyConnection, rows: pa.Table) -> bool:
    """Whether the ``model_prices`` rows ``rows`` (of every stored pair) would price a stored call
    differently from the rows stored."""
    con.register("new_prices", rows)
    try:
        return bool(con.execute(_PRICES_CHANGED_SQL).fetchall()[0][0])
    finally:
        con.unregister("new_prices")


COSTS_MISSING_SQL = "SELECT count(*) FROM (SELECT 1 FROM run_calls WHERE priced IS NULL LIMIT 1)"
"""A stored call without its price (a store whose tables just gained the cost columns)."""


def costs_missing(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether a stored call has no price stored (:data:`COSTS_MISSING_SQL`)."""
    return bool(con.execute(COSTS_MISSING_SQL).fetchall()[0][0])


def recost(con: duckdb.DuckDBPyConnection) -> None:
    """Price every stored call again against ``model_prices`` (``call_costs.sql``) and sum each
    run's cost into ``run_facts`` again, in the caller's transaction: after the prices changed."""
    calls = DERIVE.compose("call_costs", calls="stored_calls")
    con.execute(
        "CREATE OR REPLACE TEMP TABLE repriced_calls AS "  # DISTINCT: one source row per stored row
        f"SELECT DISTINCT trace_id, run_id, started_at, span_id, priced, cost_usd, cache_saved_usd FROM ({calls})"
    )
    con.execute(
        "UPDATE run_calls SET priced = r.priced, cost_usd = r.cost_usd, cache_saved_usd = r.cache_saved_usd "
        "FROM repriced_calls r WHERE run_calls.started_at = r.started_at AND run_calls.trace_id = r.trace_id "
        "AND run_calls.run_id = r.run_id AND run_calls.span_id = r.span_id"
    )
    con.execute(RUN_COSTS_SQL.format(calls="run_calls"))
    con.execute("DROP TABLE repriced_calls")


def _insert_prices(con: duckdb.DuckDBPyConnection, rows: pa.Table) -> None:
    con.register("new_prices", rows)
    try:
        con.execute("INSERT INTO model_prices BY NAME SELECT * FROM new_prices")
    finally:
        con.unregister("new_prices")


def prune(con: duckdb.DuckDBPyConnection, cutoff: datetime) -> None:
    """Delete the derived rows of runs that started before ``cutoff`` (retention).

    Example:
        >>> prune(con, datetime(2026, 1, 1))  # doctest: +SKIP
    """
    for table in TABLES:
        con.execute(f"DELETE FROM {table} WHERE started_at < $cutoff", {"cutoff": cutoff})


def derive_traces(
    con: duckdb.DuckDBPyConnection, since: datetime, *, sessions: bool = True, prices: PriceBook | None = None
) -> None:
    """Derive the traces of the registered relation ``touched`` from ``since`` on, in the
    caller's transaction: run ids, steps, then the per-run tables (and prices for new models)."""
    con.execute(RESOLVE_RUNS_SQL, {"since": since})
    # Steps can be derived once a trace's run is known, which may be a later commit.
    con.execute(DERIVE_STEPS_SQL, {"since": since})
    refresh(con, since=since, sessions=sessions, prices=prices)
