"""A store written before run_step_totals existed (revision 0009) gets it filled on upgrade."""

from __future__ import annotations

from pathlib import Path

import duckdb
from analytics_fixture import Recorder
from budget_world import record

from loopsight.analytics.budgets import budgets
from loopsight.migrations.runner import upgrade
from loopsight.stores.duckdb_store import Store


def test_upgrading_a_0009_file_fills_run_step_totals(tmp_path: Path) -> None:
    path = str(tmp_path / "old.duckdb")
    assert upgrade(path, "0009") == "0009"
    store = Store.open(str(tmp_path / "new.duckdb"))  # the same spans, derived by today's writer
    recorder = Recorder()
    record(recorder)
    recorder.ingest(store)
    want = budgets(store.reader())
    store.close()
    con = duckdb.connect(path)
    con.execute("ATTACH $p AS source (READ_ONLY)", {"p": str(tmp_path / "new.duckdb")})
    for table in ("spans", "run_facts", "run_loops", "run_steps", "run_growth", "run_members"):
        # by name: today's tables have columns revision 0009 had not (run_facts' cache tokens)
        columns = ", ".join(f'"{r[0]}"' for r in con.execute(f"DESCRIBE {table}").fetchall())
        con.execute(f"INSERT INTO {table} SELECT {columns} FROM source.{table}")
    con.execute("DETACH source")
    assert "run_step_totals" not in {
        r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    }
    con.close()
    store = Store.open(path)  # migrates (0010 creates the table and queues every trace) and derives
    try:
        reader = store.reader()
        assert (
            reader.execute("SELECT count(*) FROM run_step_totals").fetchone()[0]
            == 10 * 2 + 9 * 3 + 5 + 16 + 6 + 4 + 1 + 6
        )
        assert budgets(reader) == want
    finally:
        store.close()
