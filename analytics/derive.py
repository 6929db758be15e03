"""Per-run facts derived from the spans: ``run_facts``, ``run_loops``, ``run_steps``, ``run_growth``, ``run_members``.

The collector's deriver thread calls :func:`refresh` in a derive pass of its own, after the commits
that stored the spans and after resolving their run ids and steps, for every trace those commits touched
(listed in ``derive_pending``, registered as the relation ``touched``). The pass runs about once a
second under load, every few seconds under a trickle (see ``collector/store.py``), and before
a query (``Store.reader`` waits for it), so a run's rollups, detected loops, per-step input tokens, growth-fit sums and
per-span stall facts are current once read after its spans are acknowledged. The rules are
not copied here: each table is filled by running the question's own SQL (``derive_runs.sql``, ``loops_core.sql``,
``burn_steps.sql``, ``burn_growth.sql``, ``stalls_members.sql``) with the ``spans`` it reads
shadowed by a CTE holding only the spans in scope.

Only spans that started at or after ``since`` are read, and only the derived rows of runs
that started at or after ``since`` are replaced: a run longer than the writer's look-back
keeps its earlier facts.

Example:
    >>> con.register("touched", arrow_table_with_TraceId)  # doctest: +SKIP
    >>> refresh(con, since=datetime(2026, 1, 1))  # doctest: +SKIP
    >>> refresh(con)  # doctest: +SKIP  (every trace: the migration's backfill)
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from loopsight.analytics.loops import compose
from loopsight.analytics.sketch import NEAR_BITS_LONG, SET_MASK, SIMHASH_MODE

TABLES = ("run_facts", "run_loops", "run_steps", "run_growth", "run_members")

_COLUMNS = (
    '"Timestamp", "TraceId", "SpanId", span_type, run_id, step, tool, args_hash, args_sketch, error_type, '
    'loop_kind, input_tokens, output_tokens, agent, "ServiceName", "StatusCode", "Duration", termination_reason, attempts, '
    '"SpanName", "ParentSpanId", end_time, "Events"'
)

_NO_FILTERS = {"since": None, "until": None, "agent": None, "service": None}

# The runs in scope with the columns run_growth repeats (the values run_facts holds for them):
# joined instead of run_facts, which would be scanned whole for a handful of runs.
_SCOPE_RUNS = (
    '(SELECT "TraceId" AS trace_id, "SpanId" AS run_id, agent, "ServiceName" AS service, "Timestamp" AS started_at '
    "FROM derive_scope WHERE span_type = 'agent' AND \"SpanId\" = run_id)"
)


def _shadowed(name: str) -> str:
    """``sql/<name>.sql`` reading ``spans`` from the scope table instead of the stored spans."""
    return compose(name, inline=True, spans="derive_scope")


def refresh(con: duckdb.DuckDBPyConnection, *, since: datetime | None = None, tables: tuple[str, ...] = TABLES) -> None:
    """Recompute the derived rows of the runs in scope, in the caller's transaction (which
    the caller rolls back on an error).

    With ``since`` the scope is the traces of the registered relation ``touched`` (a
    ``TraceId`` column), reading spans that started at or after ``since``; without it every
    stored span (the backfill). ``tables`` limits the work to some of :data:`TABLES` (a
    migration fills the tables it creates).
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
    _fill(con, since, tables)
    # Only after success: on an error the caller rolls back, which drops these temp tables
    # too, and a DROP in the aborted transaction would fail and hide what went wrong.
    con.execute("DROP TABLE IF EXISTS derive_scope")
    con.execute("DROP TABLE IF EXISTS derive_steps")


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
    if "run_facts" in tables:
        con.execute(f"INSERT INTO run_facts BY NAME SELECT * FROM ({_shadowed('derive_runs')})")
    if "run_loops" in tables:
        loops = {**_NO_FILTERS, "near_bits_long": NEAR_BITS_LONG, "simhash_mode": SIMHASH_MODE, "set_mask": SET_MASK}
        con.execute(f"INSERT INTO run_loops BY NAME SELECT * FROM ({_shadowed('loops_core')})", loops)
    if "run_steps" in tables or "run_growth" in tables:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE derive_steps AS SELECT * FROM ({_shadowed('burn_steps')})", _NO_FILTERS
        )
    if "run_steps" in tables:
        con.execute("INSERT INTO run_steps BY NAME SELECT * FROM derive_steps")
    if "run_growth" in tables:
        growth = compose("burn_growth", burn_steps="derive_steps")
        con.execute(
            "INSERT INTO run_growth BY NAME SELECT g.* EXCLUDE (agent), f.agent, f.service, f.started_at "
            f"FROM ({growth}) g JOIN {_SCOPE_RUNS} f ON f.trace_id = g.trace_id AND f.run_id = g.run_id"
        )
    if "run_members" in tables:
        con.execute(f"INSERT INTO run_members BY NAME SELECT * FROM ({_shadowed('stalls_members')})", _NO_FILTERS)


def prune(con: duckdb.DuckDBPyConnection, cutoff: datetime) -> None:
    """Delete the derived rows of runs that started before ``cutoff`` (retention).

    Example:
        >>> prune(con, datetime(2026, 1, 1))  # doctest: +SKIP
    """
    for table in TABLES:
        con.execute(f"DELETE FROM {table} WHERE started_at < $cutoff", {"cutoff": cutoff})
