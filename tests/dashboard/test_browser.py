"""The running dashboard in a real headless Chromium: every page renders its charts without a
Streamlit exception, hostile attribute values stay inert text, and screenshots are saved
under ``test-artifacts/dashboard/``.

Reads a real collector filled by ``loopsight demo`` plus our hostile, looping and stuck runs.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from dashboard_helpers import charts, tables
from dashboard_helpers import page as page_of
from dashboard_traffic import HOSTILE_AGENT, HOSTILE_SCRIPT, SESSION_ID, Emitted, emit_to_collector
from ports import free_port
from processes import stop_process

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"
# (url path, title, charts at least)
PAGES = [
    ("", "Overview", 1),
    ("runs", "Runs", 1),
    ("sessions", "Sessions", 0),
    ("stalls", "Stalls", 1),
    ("loops", "Loops", 2),
    ("burn", "Token burn", 1),
    ("tools", "Tools", 2),
    ("budgets", "Budgets", 4),
    ("alerts", "Alerts", 1),
]

RULES = """
[[rules]]
name = "loop-rate"
metric = "loop_rate"
window = "1h"
threshold = 0.1
min_samples = 2
notify = ["log"]

[[rules]]
name = "refunds-failing"
metric = "tool_fail_rate"
tool = "refund_order"
window = "1h"
threshold = 0.5
min_samples = 1
notify = ["log"]
"""

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]


@dataclass
class Live:
    """A dashboard process reading a collector filled with demo traffic and our scenarios."""

    url: str
    emitted: Emitted
    collector_url: str


@pytest.fixture(scope="module")
def live(collector_launcher, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """One collector and dashboard for the module's browser tests."""
    tmp_path = tmp_path_factory.mktemp("browser")
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    collector = collector_launcher("--rules", str(rules), "--alert-interval", "1")
    process = None
    log = open(tmp_path / "dashboard.log", "wb")
    try:
        demo = subprocess.run(
            [
                sys.executable,
                "-m",
                "loopsight",
                "demo",
                "--endpoint",
                collector.url,
                "--runs",
                "16",
                "--speed",
                "400",
                "--concurrency",
                "4",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert demo.returncode == 0, demo.stdout + demo.stderr
        emitted = emit_to_collector(
            collector.url, rounds=1, scenarios=("loop", "retried_timeout", "hostile", "stuck"), minutes_ago=5
        )
        turns = emit_to_collector(collector.url, rounds=3, scenarios=("session_turn",), minutes_ago=4)
        emitted.traces.update(turns.traces)
        deadline = time.monotonic() + 30
        while not any(r.get("state") == "firing" for r in httpx.get(f"{collector.url}/api/v1/alerts").json()["rules"]):
            assert time.monotonic() < deadline, "the loop-rate rule did not fire:\n" + collector.log()
            time.sleep(0.5)
        port = free_port()
        process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"from loopsight.dashboard import launch; raise SystemExit(launch(collector={collector.url!r}, port={port}))",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert process.poll() is None, (tmp_path / "dashboard.log").read_text()
            try:
                if httpx.get(f"{url}/_stcore/health", timeout=1).text == "ok":
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        else:
            pytest.fail("the dashboard did not start:\n" + (tmp_path / "dashboard.log").read_text())
        yield Live(url, emitted, collector.url)
    finally:
        if process is not None:
            stop_process(process, timeout=15)
        log.close()
        collector.stop()


@pytest.fixture(scope="module")
def browser(live: Live) -> Iterator[object]:
    """One headless Chromium for the module (after the dashboard, so it closes first)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        try:
            yield chromium
        finally:
            chromium.close()


def _settle(page, title: str, charts: int) -> None:
    """Wait for the page's title, its charts and the end of the script run."""
    page.get_by_role("heading", name=title, exact=True).first.wait_for(timeout=45_000)
    if charts:
        page.wait_for_function(
            "n => document.querySelectorAll('.vega-embed canvas, .vega-embed svg.marks').length >= n",
            arg=charts,
            timeout=45_000,
        )
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')?.innerText.includes('Running')",
        timeout=45_000,
    )
    page.wait_for_timeout(600)


def test_every_page_renders_in_chromium(live: Live, browser, make_app) -> None:
    url, emitted, collector_url = live.url, live.emitted, live.collector_url
    alerts = page_of(make_app(collector=collector_url), "alerts")
    assert not alerts.exception
    rules = tables(alerts)[0]
    assert set(rules["name"]) == {"loop-rate", "refunds-failing"}
    assert "firing" in " ".join(rules["state"])
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|—", str(t)) for t in rules["state_since"]), list(
        rules["state_since"]
    )
    assert not rules.isna().any().any() and "None" not in rules.astype(str).to_numpy(), "empty cells are a dash"
    assert {m.label: m.value for m in alerts.metric}["Firing"] != "0"
    assert charts(alerts), "the metric of each rule against its threshold"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    dialogs: list[str] = []
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    try:
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        for path, title, min_charts in PAGES:
            page.goto(f"{url}/{path}")
            _settle(page, title, min_charts)
            assert page.locator('[data-testid="stException"]').count() == 0, f"{path}: Streamlit exception"
            assert page.locator('[data-testid="stAlertContentError"]').count() == 0, (
                f"{path}: " + page.locator('[data-testid="stAlertContentError"]').first.inner_text()
            )
            assert page.get_by_text("Page not found").count() == 0, path
            page.screenshot(path=str(ARTIFACTS / f"{path or 'overview'}.png"), full_page=True)

        hostile = emitted.first("hostile")
        page.goto(f"{url}/?run={hostile}")
        _settle(page, "Run timeline", 2)
        assert page.locator('[data-testid="stException"]').count() == 0
        page.get_by_text(HOSTILE_AGENT, exact=False).first.wait_for(timeout=10_000)
        assert page.get_by_text("Page not found").count() == 0
        page.screenshot(path=str(ARTIFACTS / "run-hostile.png"), full_page=True)

        loop = emitted.first("loop")
        page.goto(f"{url}/run?run={loop}")
        _settle(page, "Run timeline", 2)
        page.screenshot(path=str(ARTIFACTS / "run-loop.png"), full_page=True)

        for path in ("run?run=" + hostile, "tools", "runs", "burn", ""):
            page.goto(f"{url}/{path}")
            _settle(page, "Run timeline" if path.startswith("run?") else dict((p, t) for p, t, _ in PAGES)[path], 1)
            anchors = page.evaluate(
                "() => [...document.querySelectorAll(\"a[href*='evil']:not([href^='#'])\")].map(a => a.closest('[data-testid]')?.dataset.testid + ': ' + a.outerHTML)"
            )
            assert anchors == [], f"{path}: a hostile link became a link"
            assert page.locator('a[href*="evil.example"]').count() == 0, f"{path}: a hostile link became a link"
            assert page.locator("script", has_text="alert(1)").count() == 0, f"{path}: a hostile script was injected"
            assert page.evaluate("() => document.body.innerHTML.includes('<script>alert(1)')") is False
        assert dialogs == [], f"a hostile script ran: {dialogs}"
        assert HOSTILE_SCRIPT not in page.title()
    finally:
        page.close()


def _y_labels(page) -> list[tuple[str, float]]:
    """The waterfall's shown y-axis labels (Vega hides overlapping ones with opacity 0), with their tops."""
    return page.evaluate("""() => [...document.querySelectorAll('.vega-embed')][0]
        .querySelector('g.role-axis[aria-label^="Y-axis"]').querySelectorAll('.role-axis-label text')
        .values().filter(t => t.getAttribute('opacity') !== '0')
        .map(t => [t.textContent, t.getBoundingClientRect().top]).toArray()""")


@pytest.mark.parametrize("scenario", ["stuck", "hostile", "loop"])
def test_waterfall_shows_one_readable_label_per_bar(live: Live, browser, scenario: str) -> None:
    trace = live.emitted.first(scenario)
    spans = httpx.get(f"{live.collector_url}/api/v1/runs/{trace}").json()["spans"]
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    try:
        page.goto(f"{live.url}/run?run={trace}")
        _settle(page, "Run timeline", 1)
        labels = _y_labels(page)
        assert len(labels) == len(spans), labels
        tops = [top for _, top in labels]
        assert all(b - a >= 14 for a, b in itertools.pairwise(tops)), f"labels overlap: {labels}"
    finally:
        page.close()


def test_overview_path_and_top_offenders_at_1440px(live: Live, browser) -> None:
    """/overview opens the overview (at /, filters kept); every column of the top offenders shows, formatted."""
    page = browser.new_page(viewport={"width": 1440, "height": 1600})
    try:
        page.goto(f"{live.url}/overview?range=all")
        _settle(page, "Overview", 1)
        assert page.get_by_text("Page not found").count() == 0
        assert page.url == f"{live.url}/?range=all"
        assert page.get_by_text("all time · refreshes every").count() == 1, "the filters in the link are kept"
        # all four tables drawn, each with its rows (they render one after another)
        page.wait_for_function(
            """() => {
            const grids = [...document.querySelectorAll('[data-testid=stDataFrame] table[role=grid]')];
            return grids.length === 4 && grids.every(g => g.querySelectorAll('tbody td').length >= 4);
        }""",
            timeout=20_000,
        )
        # Glide renders the accessible table of the cells in view only: a column cut off has no header.
        shown = page.evaluate("""() => [...document.querySelectorAll('[data-testid=stDataFrame] table[role=grid]')].map(t => ({
            columns: +t.getAttribute('aria-colcount'),
            headers: [...t.querySelectorAll('th')].map(h => h.textContent),
            first: [...t.querySelectorAll('tbody tr')].map(r => r.querySelector('td')?.textContent)}))""")
        _tokens, _loops, stalls, tools = shown
        for table in shown:
            assert len(table["headers"]) == table["columns"], f"columns cut off at 1440 px: {table}"
        assert [t["headers"][0] for t in shown] == ["tokens", "repeats", "duration", "fail rate"]
        assert all(re.fullmatch(r"[\d.]+ (ms|s|min|h)", d) for d in stalls["first"]), stalls
        assert all(re.fullmatch(r"\d+\.\d%", p) for p in tools["first"]), tools
    finally:
        page.close()


def _open(browser, url: str, title: str, charts: int = 1, **context: object):
    """A fresh context (1440 × 900 unless told) on ``url``, settled; returns (context, page)."""
    options = {"viewport": {"width": 1440, "height": 900}, **context}
    ctx = browser.new_context(**options)
    page = ctx.new_page()
    page.goto(url)
    _settle(page, title, charts)
    return ctx, page


def _grid_headers(page, index: int = 0) -> list[str]:
    """The column headers a dataframe shows (Glide's accessible table holds the columns in view only)."""
    page.wait_for_function(
        "i => document.querySelectorAll('[data-testid=stDataFrame] table[role=grid]')[i]?.querySelector('th')",
        arg=index,
        timeout=20_000,
    )
    return page.evaluate(
        "i => [...document.querySelectorAll('[data-testid=stDataFrame] table[role=grid]')[i].querySelectorAll('th')]"
        ".map(h => h.textContent)",
        index,
    )


def test_runs_table_at_1440x900_and_a_click_opens_the_run_in_this_tab(live: Live, browser) -> None:
    ctx, page = _open(browser, f"{live.url}/runs?range=all", "Runs")
    try:
        headers = _grid_headers(page)
        for needed in (
            "run",
            "started (UTC)",
            "agent",
            "status",
            "termination",
            "retries",
            "loops",
            "tokens",
            "cost",
            "duration",
        ):
            assert needed in headers, f"{needed!r} cut off at 1440 px: {headers}"
        cells = page.evaluate(
            "() => [...document.querySelector('[data-testid=stDataFrame] table[role=grid]').querySelectorAll('tbody tr')]"
            ".map(r => [...r.querySelectorAll('td')].map(c => c.textContent))"
        )
        assert len(cells) >= 15, "many rows, not a ten-row box"
        assert all(re.fullmatch(r"[0-9a-f]{12}", row[0]) for row in cells), cells[:3]
        assert all(re.fullmatch(r"[\d.,]+ (ms|s|min|h)|—", row[headers.index("duration")]) for row in cells)
        fills = page.evaluate(
            "() => [...new Set([...document.querySelectorAll('.vega-embed g.mark-rect path')].map(p => p.getAttribute('fill')))]"
        )
        assert set(fills) <= {"#2e9e4f", "#d62728"} and "#d62728" in fills, f"ok green, errors red: {fills}"
        grid = page.locator('[data-testid="stDataFrame"]').first.bounding_box()
        page.mouse.click(grid["x"] + 40, grid["y"] + 35 + 17)
        page.wait_for_url(re.compile(r"/run\?(.+&)?run=[0-9a-f]{32}"), timeout=20_000)
        page.get_by_role("heading", name="Run timeline", exact=True).first.wait_for(timeout=20_000)
        assert len(ctx.pages) == 1, "the run opened in this tab"
        assert cells[0][0] in page.url and "range=all" in page.url, "the run, the filters kept"
    finally:
        ctx.close()


def test_waterfall_click_selects_a_span_and_failures_are_red(live: Live, browser) -> None:
    loop = live.emitted.first("loop")
    ctx, page = _open(browser, f"{live.url}/run?run={loop}", "Run timeline", 2)
    try:
        picker = page.get_by_role("combobox", name="Span")
        assert "step 3" in picker.input_value(), "the span the loop guard flagged is shown first"
        bars = page.locator(".vega-embed").first.locator("g.mark-rect.role-mark").first.locator("path")
        assert bars.count() == len(httpx.get(f"{live.collector_url}/api/v1/runs/{loop}").json()["spans"])
        bars.nth(1).click()
        page.wait_for_function(
            "() => document.querySelector('input[aria-label=Span]')?.value.includes('chat gpt-4o · step 0')",
            timeout=20_000,
        )
        _settle(page, "Run timeline", 2)
        assert page.get_by_text("chat gpt-4o", exact=False).count() > 0
        page.wait_for_function(
            "() => [...document.querySelectorAll('.vega-embed')[0].querySelectorAll('g.mark-rect path')]"
            ".some(p => p.getAttribute('stroke') === '#f5b700')",
            timeout=10_000,
        )
        tooltips = page.evaluate(
            "() => [...document.querySelectorAll('.vega-embed')[0].querySelectorAll('g.mark-rect path')]"
            ".map(p => p.getAttribute('aria-label') || '')"
        )
        assert not any("null" in t for t in tooltips), tooltips
    finally:
        ctx.close()
    hostile = live.emitted.first("hostile")
    ctx, page = _open(browser, f"{live.url}/run?run={hostile}", "Run timeline", 2)
    try:
        fills = page.evaluate(
            "() => [...document.querySelectorAll('.vega-embed')[0].querySelectorAll('g.mark-rect path')]"
            ".map(p => [p.getAttribute('aria-label') || '', p.getAttribute('fill')])"
        )
        failed = [fill for label, fill in fills if "paint: failed" in label]
        assert failed and set(failed) == {"#d62728"}, "failed spans are filled red, like the Runs page's errors"
    finally:
        ctx.close()


def test_compare_view_and_agent_columns(live: Live, browser) -> None:
    loop = live.emitted.first("loop")
    ctx, page = _open(browser, f"{live.url}/compare?a={loop}", "Compare runs")
    try:
        page.get_by_text("They diverge at step", exact=False).first.wait_for(timeout=20_000)
        assert page.locator('[data-testid="stException"]').count() == 0
        assert "b=" in page.url, "run B chosen: a successful run of the same agent"
        assert "tokens A" in _grid_headers(page, 0)
    finally:
        ctx.close()
    for path, title in (("loops", "Loops"), ("stalls", "Stalls"), ("tools", "Tools")):
        ctx, page = _open(browser, f"{live.url}/{path}?range=all", title)
        try:
            headers = _grid_headers(page, 0)
            assert "agent" in headers, path
            if path == "loops":
                assert {"scope", "wasted tokens", "wasted cost"} <= set(headers), f"cut off at 1440 px: {headers}"
        finally:
            ctx.close()


def test_dark_theme_follows_the_system_and_axes_stay_utc(live: Live, browser) -> None:
    def background(page) -> tuple[int, ...]:
        text = page.evaluate("() => getComputedStyle(document.querySelector('.stApp')).backgroundColor")
        return tuple(int(v) for v in re.findall(r"\d+", text)[:3])

    ctx, page = _open(browser, f"{live.url}/runs?range=1h", "Runs", color_scheme="dark", timezone_id="America/New_York")
    try:
        assert sum(background(page)) < 3 * 80, "dark system theme, dark dashboard"
        assert page.locator('[data-testid="stMainMenu"]').count() == 1, "the toolbar (and its theme setting) is there"
        labels = page.evaluate(
            """() => [...document.querySelector('.vega-embed g.role-axis[aria-label^="X-axis"]')
            .querySelectorAll('.role-axis-label text')].map(t => t.textContent)"""
        )
        now = datetime.now(UTC)
        hours = {f"{(now - timedelta(minutes=m)).hour:02d}" for m in (0, 30, 60, 90)}
        assert labels and all(re.fullmatch(r"\d\d:\d\d(:\d\d)?", t) for t in labels), labels
        assert {t[:2] for t in labels} <= hours, f"UTC hours {hours}, not New York's: {labels}"
    finally:
        ctx.close()
    ctx, page = _open(browser, f"{live.url}/alerts", "Alerts", color_scheme="light")
    try:
        assert sum(background(page)) > 3 * 200, "light system theme, light dashboard"
    finally:
        ctx.close()


def test_search_box_goes_into_the_url_and_a_session_shows_its_loop(live: Live, browser) -> None:
    ctx, page = _open(browser, f"{live.url}/runs?range=all", "Runs")
    try:
        box = page.get_by_role("textbox", name="Search runs")
        box.fill("fetch_page")
        box.press("Enter")
        page.wait_for_url(re.compile(r"[?&]q=fetch_page"), timeout=20_000)
        page.get_by_text("matching fetch_page", exact=False).first.wait_for(timeout=20_000)
        assert "range=all" in page.url, "the sidebar's filters stay beside the search"
    finally:
        ctx.close()
    ctx, page = _open(browser, f"{live.url}/runs?range=all&q=fetch_page", "Runs")
    try:
        assert page.get_by_role("textbox", name="Search runs").input_value() == "fetch_page", "a link keeps the search"
    finally:
        ctx.close()
    ctx, page = _open(browser, f"{live.url}/sessions?range=all&session={SESSION_ID}", "Sessions", 0)
    try:
        page.get_by_text("span several runs of this session", exact=False).first.wait_for(timeout=20_000)
        assert page.locator('[data-testid="stException"]').count() == 0
        headers = _grid_headers(page, 2)
        assert "scope" in headers and "kind" in headers, headers
        page.screenshot(path=str(ARTIFACTS / "session.png"), full_page=True)
    finally:
        ctx.close()
    ctx, page = _open(browser, f"{live.url}/budgets?range=all", "Budgets", 4)
    try:
        assert page.locator('[data-testid="stException"]').count() == 0
        assert page.get_by_text("What each value would have cut").count() == 1
        page.screenshot(path=str(ARTIFACTS / "budgets.png"), full_page=True)
    finally:
        ctx.close()


def test_a_click_on_any_cell_of_a_session_opens_it(live: Live, browser) -> None:
    """Only the row's small checkbox opened a session; the caption says to click the session."""
    ctx, page = _open(browser, f"{live.url}/sessions?range=all", "Sessions", 0)
    try:
        grid = page.locator('[data-testid="stDataFrame"]').first.bounding_box()
        page.mouse.click(grid["x"] + 120, grid["y"] + 35 + 17)  # the session id cell of the first row
        page.wait_for_url(re.compile(r"[?&]session=[^&]+"), timeout=20_000)
        page.locator('[data-testid="stDataFrame"]').nth(1).wait_for(timeout=20_000)  # the session's runs
        assert page.locator('[data-testid="stException"]').count() == 0
        assert len(ctx.pages) == 1 and "range=all" in page.url
    finally:
        ctx.close()


def test_no_figure_tile_is_cut_short_at_1280px(live: Live, browser) -> None:
    """The Overview's eight KPI tiles in one row showed '$0.…' and '76.…' at 1,280 px."""
    loop = live.emitted.first("loop")
    pages = [(path + ("&" if "?" in path else "?") + "range=all", title, n) for path, title, n in PAGES]
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    try:
        for path, title, min_charts in [*pages, (f"run?run={loop}", "Run timeline", 2)]:
            page.goto(f"{live.url}/{path}")
            _settle(page, title, min_charts)
            cut = page.evaluate("""() => [...document.querySelectorAll('[data-testid=stMetricValue]')]
                .filter(v => [v, ...v.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1))
                .map(v => v.textContent)""")
            assert cut == [], f"{path}: tiles cut short at 1280 px: {cut}"
        page.goto(f"{live.url}/?range=all")
        _settle(page, "Overview", 1)
        assert page.locator("[data-testid=stMetricValue]").count() == 8
    finally:
        ctx.close()
