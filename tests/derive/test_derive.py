"""The derived per-run tables stay equal to the rules run over all stored spans.

Spans go through the real ingest path into a real DuckDB file, in scrambled order and
split over many requests (children before their run span, run spans in later requests,
re-delivered duplicates); after every acknowledged request the tables the writer keeps
(run_facts, run_loops, run_steps, run_growth, run_members, run_step_totals) must equal the
same SQL run over every stored span, and the questions reading them must answer as the rules run over the spans.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "detection"))
sys.path.insert(0, str(HERE.parent / "analytics"))
sys.path.insert(0, str(HERE.parent / "collector"))

from analytics_fixture import T0, Call, Recorder, Step  # noqa: E402
from detection_corpus import emit, generate  # noqa: E402
from spans import make_run, request_of, run_with_two_calls  # noqa: E402

from loopsight import analytics  # noqa: E402
from loopsight.analytics.sql import QUESTIONS, rows  # noqa: E402
from loopsight.analytics.stalls import MIN_SAMPLES  # noqa: E402
from loopsight.ingest.features import NEAR_PARAMETERS  # noqa: E402
from loopsight.ingest.pipeline import spans_to_request  # noqa: E402
from loopsight.migrations.runner import head, upgrade  # noqa: E402
from loopsight.model import RUN_STEP_TOTALS  # noqa: E402
from loopsight.stores import ingest_request  # noqa: E402
from loopsight.stores.duckdb_store import DuckDBReader, Store  # noqa: E402
from loopsight.stores.sqlfiles import DERIVE, with_ctes  # noqa: E402

FILTERS = {"since": None, "until": None, "agent": None, "service": None}
GROWTH = ["trace_id", "run_id", "agent", "points", "sxx", "sxy", "syy"]
MEMBERS = [
    "trace_id",
    "run_id",
    "span_id",
    "agent",
    "service",
    "started_at",
    "span_type",
    "what",
    "call_ms",
    "backoff_ms",
    "gap_ms",
    "at_ms",
]
STEP_TOTALS = [c.name for c in RUN_STEP_TOTALS]
STALL_PARAMS = {
    **FILTERS,
    "kind": None,
    "now": datetime(2100, 1, 1),
    "stuck_after_seconds": 300.0,
    "stuck_max_age_seconds": 21600.0,
    "min_samples": MIN_SAMPLES,  # what analytics.stalls uses by default
    "min_backoff_ms": 1000.0,
    "min_gap_ms": 2000.0,
    "limit": 1_000_000,
}
STALL_KEYS = ["trace_id", "run_id", "span_id", "kind", "tool", "duration_ms", "expected_ms"]
BURN_PARAMS = {**FILTERS, "superlinear_k": 1.2, "min_runs": 3, "min_points": 10}
BURN_KEYS = [
    "agent",
    "runs",
    "growth_exponent",
    "superlinear",
    "tokens_per_success",
    "tokens_on_failures",
    "growth_exponent_se",
    "fit_points",
]
LOOP_PARAMS = {**FILTERS, **NEAR_PARAMETERS}


def _sums(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """run_growth rows with their float sums to 9 significant digits (the summation order differs)."""
    return [{**r, **{k: f"{r[k]:.9g}" for k in ("sxx", "sxy", "syy")}} for r in found]


def _sorted(found: list[dict[str, Any]], keys: list[str]) -> list[tuple[Any, ...]]:
    return sorted(tuple(str(r[k]) for k in keys) for r in found)


def expected_from_spans(con: duckdb.DuckDBPyConnection, questions: bool = True) -> dict[str, list[tuple[Any, ...]]]:
    """The derivations computed from scratch over every stored span, and (``questions``) the
    stall and growth answers from them (their run totals come from run_facts)."""
    facts = rows(con, DERIVE.load("derive_runs"))
    loops_sql = with_ctes(QUESTIONS.load("loops"), {"loop_rows": DERIVE.load("loops_core")})
    loops = rows(con, loops_sql, {**LOOP_PARAMS, "kind": None, "limit": 1_000_000})
    steps = rows(con, DERIVE.load("burn_steps"), FILTERS)
    growth = rows(con, DERIVE.compose("burn_growth", burn_steps="burn_steps"), FILTERS)
    members = rows(con, DERIVE.load("stalls_members"), FILTERS)
    step_totals = rows(con, DERIVE.load("step_totals"), FILTERS)
    found = {
        "run_facts": _sorted(facts, list(facts[0]) if facts else []),
        "run_loops": _sorted(loops, ["trace_id", "run_id", "tool", "kind", "count", "first_step", "wasted_tokens"]),
        "run_steps": _sorted(steps, ["trace_id", "run_id", "agent", "step", "input_tokens"]),
        "run_growth": _sorted(_sums(growth), GROWTH),
        "run_members": _sorted(members, MEMBERS),
        "run_step_totals": _sorted(step_totals, STEP_TOTALS),
    }
    if questions:
        stalls = with_ctes(QUESTIONS.load("stalls"), {"members": DERIVE.load("stalls_members")})
        found["stalls"] = _sorted(rows(con, stalls, STALL_PARAMS), STALL_KEYS)
        growth_sql = DERIVE.compose("burn_growth", burn_steps="burn_steps")
        burn = with_ctes(
            QUESTIONS.load("burn_agents"), {"burn_steps": DERIVE.load("burn_steps"), "growth_rows": growth_sql}
        )
        found["burn_agents"] = _sorted(rows(con, burn, BURN_PARAMS), BURN_KEYS)
    return found


def derived(con: duckdb.DuckDBPyConnection, questions: bool = True) -> dict[str, list[tuple[Any, ...]]]:
    """What the writer kept, in the same shape, and the questions' answers from it."""
    facts = rows(con, "SELECT * EXCLUDE (tools), tools FROM run_facts")
    loops = analytics.loops(con, limit=1_000_000)
    steps = rows(con, "SELECT trace_id, run_id, agent, step, input_tokens FROM run_steps")
    growth = rows(con, "SELECT * FROM run_growth")
    members = rows(con, "SELECT * FROM run_members")
    step_totals = rows(con, "SELECT * FROM run_step_totals")
    expected_keys = list(rows(con, DERIVE.load("derive_runs") + " LIMIT 1")[0]) if facts else []
    found = {
        "run_facts": _sorted(facts, expected_keys),
        "run_loops": _sorted(loops, ["trace_id", "run_id", "tool", "kind", "count", "first_step", "wasted_tokens"]),
        "run_steps": _sorted(steps, ["trace_id", "run_id", "agent", "step", "input_tokens"]),
        "run_growth": _sorted(_sums(growth), GROWTH),
        "run_members": _sorted(members, MEMBERS),
        "run_step_totals": _sorted(step_totals, STEP_TOTALS),
    }
    if questions:
        found["stalls"] = _sorted(analytics.stalls(con, now=STALL_PARAMS["now"], limit=1_000_000), STALL_KEYS)
        found["burn_agents"] = _sorted(analytics.burn_agents(con), BURN_KEYS)
    return found


@pytest.fixture(scope="module")
def corpus_spans() -> list[Any]:
    spans, _ = emit(generate(seed=11, runs_per_vocab=12))
    return spans


def test_scrambled_arrival_matches_a_full_recompute(tmp_path: Path, corpus_spans: list[Any]) -> None:
    rng = random.Random(3)
    spans = list(corpus_spans)
    rng.shuffle(spans)  # children before their run, run spans in later requests
    again = rng.sample(spans, 40)  # re-delivered spans, in a later request
    store = Store.open(str(tmp_path / "s.duckdb"))
    try:
        con = store.reader()
        at = 0
        checks = 0
        while at < len(spans):
            size = rng.randint(1, 60)
            ingest_request(store, spans_to_request(spans[at : at + size]))
            at += size
            if rng.random() < 0.25:  # acknowledged means derived once read: compare right after the answer
                con = store.reader()
                assert derived(con) == expected_from_spans(con)
                checks += 1
        ingest_request(store, spans_to_request(again))
        con = store.reader()
        final = expected_from_spans(con)
        assert derived(con) == final
        assert checks >= 3
        # every kind of loop and every run is there, so the comparison was not vacuous
        assert {row[3] for row in final["run_loops"]} == {"exact", "oscillation", "repeated_error", "semantic"}
        assert {row[3] for row in final["stalls"]} >= {"slow_call", "backoff", "idle_gap"}
        assert any(row[2] != "None" for row in final["burn_agents"])  # a fitted growth exponent
        runs = con.execute("SELECT count(*) FROM spans WHERE span_type = 'agent' AND \"SpanId\" = run_id").fetchone()[0]
        assert len(final["run_facts"]) == runs > 40
        assert con.execute("SELECT count(*) FROM run_facts").fetchone()[0] == runs
    finally:
        store.close()


def test_the_write_ahead_log_is_checkpointed_while_passes_update_stored_spans(
    tmp_path: Path, corpus_spans: list[Any]
) -> None:
    """Run spans arriving after their children make each pass update spans stored earlier; the
    writer's checkpoints must still run, or the write-ahead log grows without bound."""
    path = tmp_path / "s.duckdb"
    wal = Path(str(path) + ".wal")
    spans = list(corpus_spans)
    random.Random(5).shuffle(spans)
    store = Store.open(str(path), checkpoint_threshold="256KB")
    try:
        largest = 0
        for at in range(0, len(spans), 40):
            ingest_request(store, spans_to_request(spans[at : at + 40]))
            store.reader().close()  # one pass per request: each updates run ids of stored spans
            largest = max(largest, wal.stat().st_size if wal.exists() else 0)
        updated = store.reader().execute("SELECT count(*) FROM spans WHERE run_id IS NOT NULL").fetchone()[0]
    finally:
        store.close()
    assert updated > 400 and store.stats.derive_passes >= len(spans) // 40
    assert path.stat().st_size > 1024 * 1024  # the spans reached the database file
    assert largest < 4 * 256 * 1024, f"write-ahead log reached {largest} bytes: no checkpoint ran"


def test_sub_agents_roll_up_into_the_enclosing_run(tmp_path: Path) -> None:
    recorder = Recorder()
    steps = [
        Step(100, 10, [Call("search", "h1")]),
        Step(200, 20, [Call("fetch", "h2", error_class="transient", attempts=3)], sub_agent="helper"),
        Step(300, 30, [Call("fetch", "h2", loop_kind="exact")], sub_agent="helper"),
    ]
    info = recorder.run(agent="outer", start=T0, steps=steps)
    spans = list(recorder.exporter.get_finished_spans())
    recorder.exporter.clear()
    store = Store.open(str(tmp_path / "s.duckdb"))
    try:
        con = store.reader()
        inner = [s for s in spans if s.name == "invoke_agent helper"]
        root = [s for s in spans if s.name == "invoke_agent outer"]
        rest = [s for s in spans if s not in inner and s not in root]
        ingest_request(store, spans_to_request(rest + inner))  # the sub-agent looks like a run for now
        con = store.reader()
        assert [r["agent"] for r in analytics.list_runs(con)] == ["helper", "helper"]  # two sub-agent spans
        ingest_request(store, spans_to_request(root))
        con = store.reader()
        (run,) = analytics.list_runs(con)
        assert (run["trace_id"], run["run_id"], run["agent"]) == (info.trace_id, info.run_id, "outer")
        assert (run["steps"], run["llm_calls"], run["tool_calls"], run["tool_errors"], run["retries"]) == (
            3,
            3,
            3,
            1,
            2,
        )
        # the sub-agent's loop mark rolls up; two calls are not a loop detection lists (``loops``)
        assert (run["input_tokens"], run["output_tokens"], run["loops"]) == (600, 60, 0)
        assert con.execute("SELECT loop_marks FROM run_facts WHERE run_id = $r", {"r": info.run_id}).fetchone()[0] == 1
        assert con.execute("SELECT count(*) FROM run_steps WHERE run_id = $r", {"r": info.run_id}).fetchone()[0] == 3
        assert derived(con) == expected_from_spans(con)
    finally:
        store.close()


def test_late_spans_of_a_run_update_its_facts(tmp_path: Path) -> None:
    recorder = Recorder()
    calls = [Call("search", "same") for _ in range(2)]
    info = recorder.run(agent="a", start=T0, steps=[Step(10, 1, calls), Step(20, 2, [Call("search", "same")])])
    spans = list(recorder.exporter.get_finished_spans())
    late = [s for s in spans if s.name == "execute_tool search"][-1]
    store = Store.open(str(tmp_path / "s.duckdb"))
    try:
        con = store.reader()
        ingest_request(store, spans_to_request([s for s in spans if s is not late]))
        con = store.reader()
        assert analytics.loops(con) == []
        assert analytics.list_runs(con)[0]["tool_calls"] == 2
        ingest_request(store, spans_to_request([late]))
        con = store.reader()
        (loop,) = analytics.loops(con)
        assert (loop["run_id"], loop["kind"], loop["count"], loop["first_step"]) == (info.run_id, "exact", 3, 0)
        assert analytics.list_runs(con)[0]["tool_calls"] == 3
        assert analytics.loop_rate(con) == {"runs": 1, "looping_runs": 1, "loop_rate": 1.0}
    finally:
        store.close()


def test_a_late_call_of_a_long_run_gets_its_run(tmp_path: Path) -> None:
    """A pass reads a trace's spans from its known run's start, not only from the late span's
    (which started 40 minutes into the run, beyond the writer's 5-minute skew margin)."""
    recorder = Recorder()
    slow = Call("search", "x", duration_ms=40 * 60 * 1000.0)
    info = recorder.run(agent="a", start=T0, steps=[Step(10, 1, [slow]), Step(20, 2, [Call("search", "y")])])
    spans = list(recorder.exporter.get_finished_spans())
    late = [s for s in spans if s.name == "execute_tool search"][-1]
    assert (late.start_time - spans[-1].start_time) / 60e9 > 40  # the run span is the last one ended
    store = Store.open(str(tmp_path / "s.duckdb"))
    try:
        ingest_request(store, spans_to_request([s for s in spans if s is not late]))
        assert store.reader().execute("SELECT count(*) FROM derive_pending").fetchone()[0] == 0
        ingest_request(store, spans_to_request([late]))
        con = store.reader()
        run_of_late = con.execute(
            'SELECT run_id, step FROM spans WHERE "SpanId" = $s', {"s": format(late.context.span_id, "016x")}
        ).fetchone()
        assert run_of_late == (info.run_id, 1)
        assert analytics.list_runs(con)[0]["tool_calls"] == 2
        assert derived(con) == expected_from_spans(con)
    finally:
        store.close()


def test_upgrading_an_existing_file_backfills_the_derived_tables(tmp_path: Path, corpus_spans: list[Any]) -> None:
    source = str(tmp_path / "source.duckdb")
    store = Store.open(source)
    try:
        ingest_request(store, spans_to_request(corpus_spans))
    finally:
        store.close()
    old = str(tmp_path / "old.duckdb")
    assert upgrade(old, "0003") == "0003"  # a file as revision 0003 made it: spans only
    con = duckdb.connect(old)
    con.execute("ATTACH $p AS source (READ_ONLY)", {"p": source})
    old_columns = {r[0] for r in con.execute("SELECT name FROM pragma_table_info('spans')").fetchall()}
    now_columns = [r[0] for r in con.execute("SELECT name FROM pragma_table_info('source.spans')").fetchall()]
    shared = ", ".join(f'"{c}"' for c in now_columns if c in old_columns)  # what revision 0003 stored
    con.execute(f"INSERT INTO spans BY NAME SELECT {shared} FROM source.spans")
    con.execute("DETACH source")
    assert "run_facts" not in {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    con.close()
    assert upgrade(old) == head()  # migrations queue every trace (0007, 0009, ...) ...
    Store.open(old).close()  # ... and the store derives them
    con = DuckDBReader(duckdb.connect(old, read_only=True))
    try:
        want = expected_from_spans(con, questions=False)  # from the spans alone, by today's rules
        assert derived(con, questions=False) == want
        assert derived(con) == expected_from_spans(con)
        assert len(want["run_members"]) > 400 and len(want["run_growth"]) > 40
        assert len(want["run_loops"]) > 10 and len(want["run_facts"]) > 40
    finally:
        con.close()


_ACK_THEN_HANG = """
import sys, time
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from loopsight.stores import ingest_request  # noqa: E402
from loopsight.stores.duckdb_store import Store
store = Store.open(sys.argv[1], derive_interval=3600, derive_max_wait=3600)  # no derive pass until asked
ingest_request(store, ExportTraceServiceRequest.FromString(sys.stdin.buffer.read()))
pending = store._con.cursor().execute("SELECT count(DISTINCT trace_id) FROM derive_pending").fetchone()[0]
print(pending, flush=True)
time.sleep(600)
"""


def assert_corpus_derived(con: duckdb.DuckDBPyConnection) -> None:
    """No trace waits for a pass, and the derived tables of the corpus equal a recompute."""
    assert con.execute("SELECT count(*) FROM derive_pending").fetchone()[0] == 0
    found = derived(con)
    assert found == expected_from_spans(con)
    assert len(found["run_facts"]) > 40


def test_traces_pending_at_a_crash_are_derived_on_open(tmp_path: Path, corpus_spans: list[Any]) -> None:
    """kill -9 after the acknowledgement and before the derive pass: the next open derives them."""
    path = str(tmp_path / "s.duckdb")
    child = subprocess.Popen(
        [sys.executable, "-c", _ACK_THEN_HANG, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        child.stdin.write(spans_to_request(corpus_spans).SerializeToString())
        child.stdin.close()
        pending = int(child.stdout.readline() or 0)
    finally:
        child.kill()
        child.wait(30)
        child.stdout.close()
    assert pending > 40  # acknowledged, not derived, when it died
    store = Store.open(path)
    try:
        assert store.stats.derive_passes == 1  # derived before open returned
        assert_corpus_derived(store.reader())
    finally:
        store.close()


def test_a_failed_pass_keeps_its_traces_pending_until_a_pass_succeeds(
    tmp_path: Path, corpus_spans: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    """A pass that fails rolls back, is counted and logs its cause; nothing it covered is
    lost: the next pass derives it."""
    store = Store.open(str(tmp_path / "s.duckdb"))
    try:
        store.run_job(lambda con: con.execute("ALTER TABLE run_loops RENAME TO run_loops_away")).result()
        assert ingest_request(store, spans_to_request(corpus_spans)) == len(corpus_spans)
        store.reader(derived=True).close()  # asks for a pass, which cannot write run_loops
        assert store.stats.failed_derives >= 1 and store.derive_pending_commits > 0
        assert "run_loops" in caplog.text and "transaction is aborted" not in caplog.text
        con = store.reader(derived=False)
        assert con.execute("SELECT count(*) FROM derive_pending").fetchone()[0] > 40
        assert con.execute("SELECT count(*) FROM run_facts").fetchone()[0] == 0  # the whole pass rolled back
        con.close()
        store.run_job(lambda con: con.execute("ALTER TABLE run_loops_away RENAME TO run_loops")).result()
        con = store.reader()
        assert store.derive_pending_commits == 0
        assert_corpus_derived(con)
    finally:
        store.close()


def test_a_trickle_of_requests_does_not_pay_a_pass_per_request(tmp_path: Path, corpus_spans: list[Any]) -> None:
    """Requests 100 ms apart leave the writer idle between them; a pass (~150-200 ms of CPU
    however small) waits until the first pending commit is ``derive_max_wait`` old."""
    store = Store.open(str(tmp_path / "s.duckdb"), derive_max_wait=60)
    try:
        for at in range(0, 320, 40):
            ingest_request(store, spans_to_request(corpus_spans[at : at + 40]))
            time.sleep(0.1)
        assert store.stats.derive_passes == 0 and store.derive_pending_commits == 8
        con = store.reader()  # a reader still gets current tables: it asks for the pass
        assert store.stats.derive_passes == 1 and store.derive_pending_commits == 0
        assert derived(con) == expected_from_spans(con)
    finally:
        store.close()


def test_a_due_pass_runs_while_the_writer_is_idle(tmp_path: Path, corpus_spans: list[Any]) -> None:
    store = Store.open(str(tmp_path / "s.duckdb"), derive_max_wait=0.3)
    try:
        ingest_request(store, spans_to_request(corpus_spans))
        deadline = time.monotonic() + 10
        while store.derive_pending_commits and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.stats.derive_passes == 1 and store.derive_pending_commits == 0  # no reader asked
        assert_corpus_derived(store.reader(derived=False))
    finally:
        store.close()


def test_a_failing_pass_is_retried_while_idle_with_a_growing_wait(tmp_path: Path, corpus_spans: list[Any]) -> None:
    """Retries double their wait (0.05, 0.1, 0.2, ... s here): a persistent failure does not
    spin a pass and an error line every interval, and a transient one heals without a reader."""
    store = Store.open(str(tmp_path / "s.duckdb"), derive_interval=0.05, derive_max_wait=0.05)
    try:
        store.run_job(lambda con: con.execute("ALTER TABLE run_loops RENAME TO run_loops_away")).result()
        ingest_request(store, spans_to_request(corpus_spans))
        time.sleep(2.0)
        assert 2 <= store.stats.failed_derives <= 6  # a fixed 0.05 s retry would fail ~15-40 times
        store.run_job(lambda con: con.execute("ALTER TABLE run_loops_away RENAME TO run_loops")).result()
        deadline = time.monotonic() + 10  # the next retry is at most 1.6 s away
        while store.derive_pending_commits and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.derive_pending_commits == 0
    finally:
        store.close()


def test_a_pass_runs_once_enough_spans_wait_for_it(tmp_path: Path, corpus_spans: list[Any]) -> None:
    """Under a flood a pass blocks commits while it runs: once ``derive_rows`` spans wait, it
    is due ``derive_interval`` after the first of them, not ``derive_max_wait``."""
    store = Store.open(str(tmp_path / "s.duckdb"), derive_interval=0.2, derive_max_wait=60, derive_rows=300)
    try:
        for at in range(0, 280, 40):
            ingest_request(store, spans_to_request(corpus_spans[at : at + 40]))
        assert store.stats.derive_passes == 0  # 280 spans wait
        ingest_request(store, spans_to_request(corpus_spans[280:320]))
        deadline = time.monotonic() + 10
        while store.derive_pending_commits and time.monotonic() < deadline:
            time.sleep(0.02)
        assert store.stats.derive_passes == 1 and store.derive_pending_commits == 0  # no reader asked
    finally:
        store.close()


def test_commits_are_answered_while_a_pass_runs(tmp_path: Path) -> None:
    """Passes run on their own thread: a batch that arrives during a long pass is committed and
    answered before that pass ends, and a reader asking after the answer sees its run."""
    store = Store.open(str(tmp_path / "s.duckdb"), derive_interval=3600, derive_max_wait=3600, barrier_timeout=120)
    try:
        spans = [span for _ in range(12_000) for span in make_run()]  # 48,000 spans: a pass of ~0.5 s here
        for at in range(0, len(spans), 4096):
            ingest_request(store, request_of(spans[at : at + 4096]))
        pass_ended: list[tuple[bool, float]] = []
        reader = threading.Thread(target=lambda: pass_ended.append((store.wait_derived(), time.monotonic())))
        reader.start()
        time.sleep(0.05)  # the pass has begun
        late = make_run(trace_id=b"\x07" * 16)
        assert ingest_request(store, request_of(late)) == len(late)
        answered = time.monotonic()
        reader.join()
        ((derived, ended),) = pass_ended
        assert derived and store.stats.derive_passes == 1 and answered < ended
        con = store.reader()  # waits for a pass that covers the late commit
        assert con.execute("SELECT count(*) FROM run_facts WHERE trace_id = ?", ["07" * 16]).fetchone()[0] == 1
        assert store.derive_pending_commits == 0
    finally:
        store.close()


def test_a_pass_starts_derive_interval_after_the_last_one_ended(tmp_path: Path) -> None:
    """Under a steady stream of commits passes are spaced from the end of the last one, so the
    writer's commits get windows with no pass open, in which they can checkpoint the log."""
    store = Store.open(str(tmp_path / "s.duckdb"), derive_interval=0.5, derive_max_wait=0.5, derive_rows=1)
    try:
        seen: list[tuple[int, float, float]] = []  # (passes, when seen, seconds spent in passes)
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            ingest_request(store, request_of([span for _ in range(25) for span in make_run()]))
            stats = store.stats
            if not seen or stats.derive_passes > seen[-1][0]:
                seen.append((stats.derive_passes, time.monotonic(), stats.derive_seconds_sum))
        # Idle time before each pass: its end (as seen) less its length, less the previous end.
        idle = [
            (t - (spent - spent_before)) - t_before
            for (n_before, t_before, spent_before), (n, t, spent) in itertools.pairwise(seen)
            if n == n_before + 1
        ]
        # 0.5 s each, less how late each end is seen (~0.23 s when a pass was due from its first commit)
        assert len(idle) >= 2 and min(idle) >= 0.4, idle
    finally:
        store.close()


def test_a_trace_that_cannot_be_derived_is_set_aside_and_holds_back_no_other(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A trace stored by an earlier loopsight with 5e18 tokens on two calls overflows its run's
    sums in every pass: retried whole, no later run was ever listed. Now the pending traces are
    derived in halves and the one that fails alone is set aside (logged, counted), spans kept."""
    store = Store.open(str(tmp_path / "s.duckdb"))
    try:
        poisoned = run_with_two_calls("poisoned")
        assert ingest_request(store, request_of(poisoned)) == 4
        store.reader().close()  # derived while its numbers were sane
        trace = poisoned[0].trace_id.hex()

        def poison(con: duckdb.DuckDBPyConnection) -> None:  # as an earlier normalizer stored it
            con.execute(
                """UPDATE spans SET input_tokens = 5000000000000000000 WHERE "TraceId" = $t AND span_type = 'llm'""",
                {"t": trace},
            )
            con.execute(
                """INSERT INTO derive_pending SELECT $t, min("Timestamp") FROM spans WHERE "TraceId" = $t""",
                {"t": trace},
            )

        store.run_job(poison).result()
        healthy = [make_run(tools=2, agent=f"healthy-{i}") for i in range(5)]
        for spans in healthy:
            ingest_request(store, request_of(spans))
        con = store.reader()
        agents = {r["agent"]: r for r in analytics.list_runs(con)}
        assert set(agents) == {"poisoned"} | {f"healthy-{i}" for i in range(5)}
        assert agents["healthy-3"]["tool_calls"] == 2
        assert agents["poisoned"]["input_tokens"] == 200  # as derived before the poison
        assert con.execute("SELECT count(*) FROM derive_pending").fetchone()[0] == 0
        assert store.stats.set_aside_traces == 1 and store.stats.failed_derives >= 1
        assert f"trace {trace} cannot be derived" in caplog.text
        assert con.execute("""SELECT count(*) FROM spans WHERE "TraceId" = $t""", {"t": trace}).fetchone()[0] == 4
    finally:
        store.close()
