"""Nothing acknowledged is lost: kill -9 during load, then restart; migrations keep data."""

from __future__ import annotations

import threading
import time

import duckdb
import httpx
import pytest
from spans import make_run, request_of

from loopsight.ingest.pipeline import prepare
from loopsight.migrations import current, upgrade
from loopsight.stores.duckdb_store import Store

PB = {"Content-Type": "application/x-protobuf"}


@pytest.mark.slow
def test_kill_9_during_load_keeps_every_acknowledged_span(start_collector):
    server = start_collector()
    acked: list[tuple[str, str]] = []
    errors: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def load() -> None:
        with httpx.Client(timeout=10) as client:
            while not stop.is_set():
                spans = [span for _ in range(10) for span in make_run(tools=4)]
                try:
                    response = client.post(server.traces_url, content=request_of(spans).SerializeToString(), headers=PB)
                except httpx.HTTPError as exc:
                    errors.append(type(exc).__name__)
                    return
                if response.status_code == 200:
                    with lock:
                        acked.extend((s.trace_id.hex(), s.span_id.hex()) for s in spans)

    workers = [threading.Thread(target=load) for _ in range(3)]
    for worker in workers:
        worker.start()
    deadline = time.monotonic() + 30
    while len(acked) < 3000 and time.monotonic() < deadline:
        time.sleep(0.05)
    server.kill()
    stop.set()
    for worker in workers:
        worker.join(30)
    assert len(acked) >= 3000, f"load too slow: {len(acked)} spans acknowledged"

    restarted = start_collector(db_path=server.db_path)
    assert httpx.get(restarted.url + "/healthz").status_code == 200
    assert restarted.stop() == 0
    con = duckdb.connect(restarted.db_path, read_only=True)
    con.execute("CREATE TEMP TABLE acked (tid VARCHAR, sid VARCHAR)")
    con.executemany("INSERT INTO acked VALUES (?, ?)", acked)  # test bookkeeping, not the ingest path
    missing = con.execute(
        'SELECT count(*) FROM acked a ANTI JOIN spans s ON s."TraceId" = a.tid AND s."SpanId" = a.sid'
    ).fetchone()[0]
    stored, distinct = con.execute('SELECT count(*), count(DISTINCT ("TraceId", "SpanId")) FROM spans').fetchone()
    assert missing == 0, f"{missing} of {len(acked)} acknowledged spans lost"
    assert stored == distinct and stored >= len(acked)


def test_upgrade_from_0001_keeps_every_span_and_the_writer_keeps_working(tmp_path):
    path = str(tmp_path / "old.duckdb")
    assert upgrade(path, "0001") == "0001"
    con = duckdb.connect(path)
    spans = make_run(tools=3)
    table = prepare(request_of(spans)).table
    con.register("incoming", table)
    old_columns = [r[0] for r in con.execute("SELECT name FROM pragma_table_info('spans')").fetchall()]
    picked = ", ".join(f'"{c}"' for c in old_columns if c in table.column_names)
    con.execute(f"INSERT INTO spans BY NAME SELECT {picked} FROM incoming")
    con.execute(
        "UPDATE spans SET run_id = (SELECT \"SpanId\" FROM spans WHERE span_type = 'agent')"
    )  # as 0001's writer did
    from loopsight.model import SPANS

    now = {c.name for c in SPANS}  # a column a later migration replaced (args_sketch) is not kept
    kept = ", ".join(f'"{c}"' for c in old_columns if c != "ingested_at" and c in now)
    before = con.execute(f'SELECT {kept} FROM spans ORDER BY "SpanId"').fetchall()
    con.close()

    store = Store.open(path)
    try:
        assert store.reader().execute("SELECT version_num FROM alembic_version").fetchone()[0] >= "0003"
        after = store.reader().execute(f'SELECT {kept} FROM spans ORDER BY "SpanId"').fetchall()
        assert after == before
        # the same spans again are duplicates; a new run is stored and resolved
        store.submit(table).result(timeout=30)
        store.submit(prepare(request_of(make_run(tools=1))).table).result(timeout=30)
        total, runs = (
            store.reader()
            .execute("SELECT count(*), count(*) FILTER (WHERE span_type = 'agent' AND \"SpanId\" = run_id) FROM spans")
            .fetchone()
        )
        assert (total, runs) == (5 + 3, 2)
    finally:
        store.close()
    assert current(path) >= "0003"
