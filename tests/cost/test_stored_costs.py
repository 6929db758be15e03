"""Costs are stored when derived (``run_calls``, ``run_facts``) and stored again when the prices
change: a writer opening with other prices reprices history, a call arriving late (of a model the
store had not seen) is priced with its run, and a file made before the costs were stored gets them
from its migration (0012) without a derive pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
from cost_world import MTOK, PRICED_RUN_COST, Trace, World, build

from loopsight import analytics
from loopsight.ingest.otlp import decode_request
from loopsight.migrations.runner import upgrade
from loopsight.prices import PriceBook
from loopsight.stores import ingest_request
from loopsight.stores.duckdb_store import DuckDBReader, Store

FINETUNE_FILE = '[models."my-finetune"]\ninput = 1.00\noutput = 2.00\n'
FINETUNE_CALL = (100 * 1.00 + 10 * 2.00) / MTOK


def _ingest(store: Store, world: World) -> None:
    ingest_request(store, decode_request(world.body(), "application/json", None, 10**9))


def _run(reader: Any, world: World, name: str) -> dict[str, Any]:
    (run,) = analytics.list_runs(reader, trace_id=world.trace_id(name))
    return run


def _stored(reader: Any, world: World, name: str) -> tuple[Any, ...]:
    sql = "SELECT cost_usd, unpriced_calls FROM run_facts WHERE trace_id = $t"
    (row,) = reader.rows(sql, {"t": world.trace_id(name)})
    return row["cost_usd"], row["unpriced_calls"]


def test_reopening_with_other_prices_stores_history_priced_again(tmp_path: Path) -> None:
    world, path = build(), str(tmp_path / "c.duckdb")
    store = Store.open(path)
    _ingest(store, world)
    assert _stored(store.reader(), world, "unpriced") == (None, 1)  # unpriced: NULL, never 0
    store.close()

    store = Store.open(path, prices=PriceBook.parse(FINETUNE_FILE))
    reader = store.reader()
    assert _stored(reader, world, "unpriced") == (pytest.approx(FINETUNE_CALL, abs=1e-15), 0)
    assert _run(reader, world, "priced")["cost_usd"] == pytest.approx(PRICED_RUN_COST + FINETUNE_CALL, abs=1e-9)
    assert reader.rows("SELECT count(*) AS n FROM run_calls WHERE NOT priced")[0]["n"] == 0
    store.close()

    store = Store.open(path)  # the bundled table alone again: the fine-tune is unpriced again
    try:
        reader = store.reader()
        assert _stored(reader, world, "unpriced") == (None, 1)
        assert _run(reader, world, "priced")["cost_usd"] == pytest.approx(PRICED_RUN_COST, abs=1e-9)
    finally:
        store.close()


def test_a_late_call_of_a_model_new_to_the_store_is_priced_with_its_run(tmp_path: Path) -> None:
    world = build()
    store = Store.open(
        str(tmp_path / "c.duckdb"), prices=PriceBook.parse('[models."late-model"]\ninput = 1.00\noutput = 2.00\n')
    )
    try:
        _ingest(store, world)
        before = _run(store.reader(), world, "priced")
        trace = world.traces["priced"]
        run = next(s["spanId"] for s in trace.spans if s["name"].startswith("invoke_agent"))
        late = Trace(trace.start_ns, trace_id=trace.trace_id, clock=trace.clock)
        late.chat(run, 4, "openai", "late-model", (1_000, 0, 0, 100))
        _ingest(store, World({"priced": late}, world.start_ns))
        reader = store.reader()
        after = _run(reader, world, "priced")
        assert after["llm_calls"] == before["llm_calls"] + 1
        assert after["cost_usd"] == pytest.approx(before["cost_usd"] + (1_000 * 1.00 + 100 * 2.00) / MTOK, abs=1e-9)
        assert after["unpriced_calls"] == 1  # my-finetune
        models = {m["model"]: m for m in analytics.models(reader)}
        assert models["late-model"]["priced"] and models["late-model"]["cost_usd"] == pytest.approx(0.0012)
    finally:
        store.close()


_0011_TABLES = ("spans", "run_facts", "run_loops", "run_steps", "run_growth", "run_members", "run_step_totals")


def _answers(reader: Any) -> dict[str, Any]:
    return {
        "runs": analytics.list_runs(reader, limit=100),
        "models": analytics.models(reader),
        "burn": analytics.burn(reader),
        "loops": analytics.loops(reader),
    }


def test_upgrading_a_0011_file_stores_the_costs_it_priced_when_read(tmp_path: Path) -> None:
    old = str(tmp_path / "old.duckdb")
    assert upgrade(old, "0011") == "0011"
    store = Store.open(str(tmp_path / "new.duckdb"))  # the same spans, derived by today's writer
    world = build()
    _ingest(store, world)
    want = _answers(store.reader())
    store.close()
    con = duckdb.connect(old)
    con.execute("ATTACH $p AS source (READ_ONLY)", {"p": str(tmp_path / "new.duckdb")})
    for table in (*_0011_TABLES, "run_calls", "model_prices"):
        # by name: revision 0011 has not today's cost columns
        columns = ", ".join(f'"{r[0]}"' for r in con.execute(f"DESCRIBE {table}").fetchall())
        con.execute(f"INSERT INTO {table} SELECT {columns} FROM source.{table}")
    con.execute("DETACH source")
    con.close()

    assert upgrade(old) == "0012"  # the migration alone (no writer, no derive pass) stores the costs
    con = duckdb.connect(old, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM derive_pending").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM run_calls WHERE priced IS NULL").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM run_facts WHERE unpriced_calls IS NULL").fetchone()[0] == 0
        assert _answers(DuckDBReader(con)) == want
        assert _run(DuckDBReader(con), world, "priced")["cost_usd"] == pytest.approx(PRICED_RUN_COST, abs=1e-9)
    finally:
        con.close()
