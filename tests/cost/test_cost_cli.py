"""``--prices FILE`` on the commands that write a store, and ``loopsight runs`` in money (issue 22)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cost_world import MTOK, SONNET_LONG_CALL, SONNET_SHORT_CALL, build

WORLD = build()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    return subprocess.run(
        [sys.executable, "-m", "loopsight", *args], capture_output=True, text=True, timeout=300, env=env, check=False
    )


def test_ingest_and_db_upgrade_take_a_price_file(tmp_path: Path) -> None:
    spans = tmp_path / "spans.json"
    spans.write_bytes(WORLD.body())
    prices = tmp_path / "prices.yaml"
    prices.write_text('models:\n  "my-finetune": {input: 2.0, output: 4.0}\n', encoding="utf-8")
    db = str(tmp_path / "cli.duckdb")

    loaded = _cli("ingest", str(spans), "--db", db, "--prices", str(prices))
    assert loaded.returncode == 0, loaded.stderr + loaded.stdout
    listed = _cli("runs", "--db", db, "--json", "--limit", "100")
    assert listed.returncode == 0, listed.stderr
    runs = {r["trace_id"]: r for r in map(json.loads, listed.stdout.splitlines())}
    finetune = (100 * 2.0 + 10 * 4.0) / MTOK
    assert runs[WORLD.trace_id("unpriced")]["cost_usd"] == pytest.approx(finetune, abs=1e-9)
    mini = ((12_000 - 8_192) * 0.15 + 8_192 * 0.075 + 800 * 0.60) / MTOK
    priced = runs[WORLD.trace_id("priced")]
    assert priced["cost_usd"] == pytest.approx(mini + SONNET_LONG_CALL + SONNET_SHORT_CALL + finetune, abs=1e-6)
    assert priced["unpriced_calls"] == 0

    # Upgrading (reopening) without the file reprices with the bundled table alone: the fine-tune is unpriced again.
    upgraded = _cli("db", "upgrade", "--db", db)
    assert upgraded.returncode == 0, upgraded.stderr
    table = _cli("runs", "--db", db, "--limit", "100")
    assert "cost" in table.stdout.splitlines()[1] and "unpriced" in table.stdout
    again = {r["trace_id"]: r for r in map(json.loads, _cli("runs", "--db", db, "--json").stdout.splitlines())}
    assert again[WORLD.trace_id("unpriced")]["cost_usd"] is None

    prices.write_text('models:\n  "my-finetune": {input: 2.0, output: lots}\n', encoding="utf-8")
    refused = _cli("db", "upgrade", "--db", db, "--prices", str(prices))
    assert refused.returncode != 0
    expected = f"{prices}:2: model 'my-finetune', key 'output': must be a number"
    assert "".join(expected.split()) in "".join(refused.stderr.split())  # the console may wrap it


def test_runs_table_says_unpriced_only_for_a_run_whose_calls_have_no_price(tmp_path: Path) -> None:
    """``unpriced`` asks for a price file; a run without a model call with tokens has nothing to price:
    a dash, as the dashboard's Runs page shows it (the same rule, loopsight.format.money)."""
    from cost_world import Trace, World

    start = WORLD.start_ns + 30 * 10**9
    tools_only = Trace(start)
    run = os.urandom(8).hex()
    tools_only.tool(run, 0, "search", '{"q": "no model"}')
    tools_only.run_span(run, "tools-only-agent", "completed")
    no_usage = Trace(start + 10**9)
    run = os.urandom(8).hex()
    no_usage.span(
        "chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}, parent=run, kind=3
    )
    no_usage.run_span(run, "no-usage-agent", "completed")
    world = World({**WORLD.traces, "tools_only": tools_only, "no_usage": no_usage}, WORLD.start_ns)
    spans = tmp_path / "spans.json"
    spans.write_bytes(world.body())
    db = str(tmp_path / "cli.duckdb")
    assert _cli("ingest", str(spans), "--db", db).returncode == 0

    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))} | {"COLUMNS": "300"}
    table = subprocess.run(
        [sys.executable, "-m", "loopsight", "runs", "--db", db, "--limit", "100"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert table.returncode == 0, table.stderr
    rows = {
        trace: line for line in table.stdout.splitlines() for trace in world.traces if world.trace_id(trace) in line
    }
    cost_of = {name: rows[name].split("│")[11].strip() for name in ("tools_only", "no_usage", "unpriced")}
    assert cost_of == {"tools_only": "—", "no_usage": "—", "unpriced": "unpriced"}


def test_ingest_to_a_collector_refuses_a_price_file_it_would_not_apply(tmp_path: Path) -> None:
    """The collector prices with its own --prices: a file given to ``ingest --collector`` was silently
    ignored (the costs stayed the collector's); it is refused like --db, before anything is sent."""
    spans = tmp_path / "spans.json"
    spans.write_bytes(WORLD.body())
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."my-finetune"]\ninput = 2.0\noutput = 4.0\n', encoding="utf-8")
    # no collector listens there: the refusal comes before any request
    refused = _cli("ingest", str(spans), "--collector", "http://127.0.0.1:9", "--prices", str(prices))
    assert refused.returncode == 2
    message = " ".join(refused.stderr.split())
    assert (
        "--collector sends the files to the collector, which has its own store, limits and prices: drop --prices"
        in message
    )
