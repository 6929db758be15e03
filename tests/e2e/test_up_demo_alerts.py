"""``loopsight up --demo`` loads the demo's sample rules: a newcomer's Alerts page shows real
firing alerts (in Chromium), from the collector ``up`` started and the traffic it sent."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from ports import free_port
from processes import stop_process

from loopsight.react.scenarios import REQUIRED

CHROMIUM = "/usr/bin/chromium"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (make browser)"),
]


def test_up_demo_shows_firing_alerts_on_the_alerts_page(tmp_path: Path) -> None:
    http_port, dashboard_port = free_port(), free_port()
    log = tmp_path / "up.log"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    args = ["up", "--demo", "--demo-runs", str(len(REQUIRED)), "--demo-every", "0", "--db", str(tmp_path / "up.duckdb")]
    args += ["--http-port", str(http_port), "--grpc-port", str(free_port()), "--dashboard-port", str(dashboard_port)]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "loopsight", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**clean, "LOOPSIGHT_ALERT_INTERVAL": "1"},
        )
    try:
        deadline = time.monotonic() + 150
        states: dict[str, str] = {}
        while time.monotonic() < deadline and process.poll() is None:
            try:
                rules = httpx.get(f"http://127.0.0.1:{http_port}/api/v1/alerts", timeout=5).json()["rules"]
                states = {r["name"]: r["state"] for r in rules}
            except httpx.HTTPError:
                pass
            if states == {"demo-loops": "firing", "demo-crashed-worker": "firing"}:
                break
            time.sleep(0.5)
        assert states == {"demo-loops": "firing", "demo-crashed-worker": "firing"}, log.read_text()
        assert "rules" in log.read_text() and "demo_rules.toml" in log.read_text()

        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            try:
                page = browser.new_page(viewport={"width": 1440, "height": 900})
                page.goto(f"http://127.0.0.1:{dashboard_port}/alerts")
                page.get_by_role("heading", name="Alerts", exact=True).first.wait_for(timeout=60_000)
                page.get_by_text("demo-crashed-worker (stuck_runs)").first.wait_for(timeout=60_000)
                page.get_by_text("demo-loops (loop_rate)").first.wait_for(timeout=60_000)
                tiles = page.locator("[data-testid=stMetric]")
                tiles.first.wait_for(timeout=60_000)
                shown = {t.split("\n")[0]: t.split("\n")[-1] for t in tiles.all_inner_texts()}
                assert shown["Rules"] == "2" and shown["Firing"] == "2", shown
            finally:
                browser.close()
    finally:
        stop_process(process)
