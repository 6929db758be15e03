"""Stores made by earlier loopsight versions open and upgrade: the migrations that remain, then
the tables and columns the model has and the store lacks (rendered from loopsight.model), and a
re-derivation of every trace when the spans or a derived table changed."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from exporter_rows import request_to_otel_traces

from loopsight.analytics.runs import list_runs
from loopsight.model import TABLES
from loopsight.stores.clickhouse_schema import to_model, upgrade
from loopsight.stores.clickhouse_store import derive_pending, sync

# What the earlier versions recorded: every id of their history, the superseded ones too.
HISTORY = (
    "0001_otel_traces",
    "0002_typed_columns",
    "0003_spans_view",
    "0004_alerts",
    "0005_run_index",
    "0006_span_type_pydantic_run",
    "0007_alert_deliveries",
    "0008_args_sketch",
    "0009_typed_spans",
    "0010_run_facts",
    "0011_bounded_numbers",
    "0012_one_model",
    "0013_alert_views",
    "0014_sessions_and_frameworks",
    "0015_run_step_totals",
    "0016_cost",
    "0017_retention_floor",
)


def _columns(con: Any, table: str) -> list[str]:
    found = con.execute(
        "SELECT name FROM system.columns WHERE database = currentDatabase() AND table = {t:String}", {"t": table}
    ).fetchall()
    return [r[0] for r in found]


def _record(con: Any, upto: str) -> None:
    for version in HISTORY:
        if version[:4] <= upto:
            con.execute("INSERT INTO loopsight_schema_migrations (version) VALUES ({v:String})", {"v": version})


def test_a_store_made_before_cost_gains_its_tables_and_columns_and_derives_again(
    new_clickhouse: Callable[[], Any], duck: Any, fixture_request: Any
) -> None:
    con = new_clickhouse()  # today's model, then made as the version at 0015 left it
    con.insert_arrow("otel_traces", request_to_otel_traces(fixture_request))
    sync(con)
    for table in ("run_calls", "model_prices"):
        con.command(f"DROP TABLE {table}")
    con.command(
        "ALTER TABLE run_facts DROP COLUMN cache_read_tokens, DROP COLUMN cache_write_tokens, "
        "DROP COLUMN cost_usd, DROP COLUMN cache_saved_usd, DROP COLUMN unpriced_calls"
    )
    con.command("TRUNCATE TABLE loopsight_schema_migrations")
    _record(con, "0015")

    assert upgrade(con) == ["0017_retention_floor"]  # the model's tables come from the model, not a migration
    for table in ("run_calls", "model_prices", "run_facts"):
        assert _columns(con, table) == [c.name for c in TABLES[table]]
    pending = con.execute("SELECT count(DISTINCT trace_id) FROM derive_pending").fetchall()[0][0]
    assert pending == con.execute("SELECT count(DISTINCT TraceId) FROM spans").fetchall()[0][0] > 0
    derive_pending(con)
    assert con.execute("SELECT count() FROM run_calls").fetchall()[0][0] > 0
    assert list_runs(con, limit=100) == list_runs(duck, limit=100)
    assert to_model(con) == []  # and nothing more on the next open


def test_a_store_of_the_earlier_model_is_migrated_and_refilled_from_the_exporter_table(
    new_clickhouse: Callable[[], Any], duck: Any, fixture_request: Any
) -> None:
    con = new_clickhouse()
    for table in [*TABLES, "loopsight_import", "loopsight_secret", "alert_rules_current", "alert_events_current"]:
        con.command(f"DROP {'VIEW' if table.endswith('_current') else 'TABLE'} {table}")
    con.command("TRUNCATE TABLE loopsight_schema_migrations")
    # what 0002-0011 made: typed columns on otel_traces and loopsight's own tables
    con.command("ALTER TABLE otel_traces ADD COLUMN loopsight_agent String, ADD COLUMN loopsight_args_sketch UInt64")
    con.command("CREATE TABLE loopsight_run_index (TraceId String) ENGINE = MergeTree ORDER BY TraceId")
    _record(con, "0011")
    con.insert_arrow("otel_traces", request_to_otel_traces(fixture_request))

    assert upgrade(con) == [
        "0012_one_model",
        "0013_alert_views",
        "0014_sessions_and_frameworks",
        "0017_retention_floor",
    ]
    assert not [c for c in _columns(con, "otel_traces") if c.startswith("loopsight_")]
    assert not _columns(con, "loopsight_run_index")
    for table, columns in TABLES.items():
        assert _columns(con, table) == [c.name for c in columns], table
    sync(con)
    assert list_runs(con, limit=100) == list_runs(duck, limit=100)


@pytest.mark.subprocess  # chdb's readonly setting cannot be undone in a process
def test_a_read_only_account_reads_a_current_store(tmp_path: Any) -> None:
    """Every reader opening a store ran CREATE TABLE IF NOT EXISTS for the migrations' ledger, which a
    read-only account (readonly = 2: settings allowed, no DDL) may not: the dashboard could not open."""
    opened = "from loopsight.stores.clickhouse import connect_chdb; con = connect_chdb({path!r}); "
    upgraded = "from loopsight.stores.clickhouse_schema import upgrade; upgrade(con); "
    listed = "from loopsight.analytics import list_runs; print(list_runs(con))"
    import subprocess

    path = str(tmp_path / "ch")
    for code in (opened + upgraded, opened + "con.command('SET readonly = 2'); " + upgraded + listed):
        done = subprocess.run(
            [sys.executable, "-c", code.format(path=path)],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parents[2],
        )
        assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
