"""Benchmark: the dashboard in a real Chromium, cold first load and page switches, per page.

Starts a collector on a DuckDB file holding the demo traffic (``loopsight demo``), and with
``--big`` a second one on a file of 1 M spans (100,000 runs over the last 7 days, built as
``bench_analytics.py`` builds its file). For each data set it starts the dashboard (this
checkout's, and with ``--baseline REV`` also the dashboard of that git revision, side by
side, against the same collector) and drives headless Chromium with Playwright:

* **cold**: a fresh browser context (no cache, no cookies) opens the page's URL;
* **switch**: inside a loaded app, a click on the page's link in the sidebar.

Either is timed until the page stops changing: the script run the navigation started has
finished (Streamlit's ``script_finished`` message on the websocket), no run is in progress,
and the DOM has not changed for 300 ms; the figure is the time of the last DOM change. Each
page is measured ``--repeat`` times (variants interleaved), and the p50 is printed.

    .venv/bin/python bench/bench_dashboard.py                          # demo data, this checkout
    .venv/bin/python bench/bench_dashboard.py --baseline main --big    # before/after, also at 1 M spans
    .venv/bin/python bench/bench_dashboard.py --big --big-db /tmp/1m.duckdb --keep   # reuse the 1 M file
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from io import BytesIO
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))

from ports import free_port  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
QUIET_MS = 300
TIMEOUT_S = 60.0
# (url path, the title the page shows, the sidebar link's label)
PAGES = [
    ("", "Overview", "Overview"),
    ("runs", "Runs", "Runs"),
    ("sessions", "Sessions", "Sessions"),
    ("run", "Run timeline", "Run timeline"),
    ("stalls", "Stalls", "Stalls"),
    ("loops", "Loops", "Loops"),
    ("burn", "Token burn", "Token burn"),
    ("tools", "Tools", "Tools"),
    ("budgets", "Budgets", "Budgets"),
    ("alerts", "Alerts", "Alerts"),
]
OBSERVER = """
window.__bench = {last: 0, changes: 0};
new MutationObserver(() => { window.__bench.last = performance.now(); window.__bench.changes++; })
  .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
"""
# The launcher of a dashboard tree other than this checkout's: the package's submodules
# (ui, filters, pages, ...) are imported from that tree; data.py is the same in both.
LAUNCHER = """
import sys
import loopsight.dashboard as package
package.__path__[:] = [{tree!r}]
for name in [n for n in sys.modules if n.startswith("loopsight.dashboard.") and n != "loopsight.dashboard.data"]:
    del sys.modules[name]
sys.argv = ["streamlit", *{args!r}]
from streamlit.web.cli import main
main()
"""


@dataclass
class Process:
    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _wait(url: str, process: subprocess.Popen[bytes], log: Path, what: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not start:\n{log.read_text(errors='replace')[-3000:]}")


def start_collector(db: Path, workdir: Path) -> Process:
    port = free_port()
    log = workdir / f"collector-{port}.log"
    command = [sys.executable, "-P", "-m", "loopsight", "collector", "--db", str(db)]
    command += ["--http-port", str(port), "--grpc-port", "0"]
    process = subprocess.Popen(command, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    _wait(f"{url}/healthz", process, log, "the collector")
    return Process(process, url, log)


def start_dashboard(collector: str, workdir: Path, tree: Path | None, name: str) -> Process:
    """This checkout's dashboard (``tree`` None), or the dashboard folder ``tree`` of another revision."""
    from loopsight.dashboard import APP, streamlit_command

    port = free_port()
    log = workdir / f"dashboard-{name}-{port}.log"
    env = {**os.environ, "LOOPSIGHT_COLLECTOR_URL": collector, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    env.pop("LOOPSIGHT_DASHBOARD_DB", None)
    env.pop("LOOPSIGHT_DASHBOARD_STORE", None)
    command = streamlit_command(port)
    if tree is not None:
        args = [str(tree / "entry" / "app.py") if a == str(APP) else a for a in command[3:]]
        command = [sys.executable, "-P", "-c", LAUNCHER.format(tree=str(tree), args=args)]
    process = subprocess.Popen(command, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    _wait(f"{url}/_stcore/health", process, log, f"the dashboard ({name})")
    return Process(process, url, log)


def baseline_tree(revision: str, workdir: Path) -> Path:
    """The ``dashboard/`` folder of ``revision``, extracted under ``workdir``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", revision, "dashboard"], capture_output=True, check=True
    ).stdout
    target = workdir / f"baseline-{revision.replace('/', '_')}"
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target / "dashboard"


def fill_demo(collector: str, runs: int) -> None:
    command = [sys.executable, "-P", "-m", "loopsight", "demo", "--endpoint", collector, "--runs", str(runs)]
    done = subprocess.run([*command, "--speed", "200"], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stdout + done.stderr)


def fill_big(path: Path, runs: int) -> None:
    """``runs`` runs of 10 spans over the 7 days before now, through the Store writer (bench_analytics)."""
    import bench_analytics

    end = datetime.now(UTC).replace(tzinfo=None) - timedelta(minutes=5)
    bench_analytics.START = end - timedelta(days=bench_analytics.DAYS)
    bench_analytics.END = end
    seconds = bench_analytics.fill(str(path), runs)
    print(f"filled {runs:,} runs / {runs * bench_analytics.SPANS_PER_RUN:,} spans in {seconds:.0f} s", flush=True)


@dataclass
class Watch:
    """Streamlit's script runs seen on a page's websocket (a fragment's run ends without a new session)."""

    finished: int = 0
    running: bool = False


def _watch(page: Any) -> Watch:
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    watch = Watch()

    def frame(payload: Any) -> None:
        if not isinstance(payload, bytes):
            return
        message = ForwardMsg()
        try:
            message.ParseFromString(payload)
        except Exception:  # a frame that is not a ForwardMsg: not ours to judge
            return
        kind = message.WhichOneof("type")
        if kind == "new_session":
            watch.running = True
        elif kind == "script_finished":
            watch.running = False
            watch.finished += 1

    page.on("websocket", lambda ws: ws.on("framereceived", frame))
    return watch


def settle(page: Any, watch: Watch, finished_before: int, since_ms: float, title: str) -> float:
    """Wait until the page stops changing; the ms from ``since_ms`` (page clock) to its last DOM change."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        page.wait_for_timeout(40)
        if watch.finished <= finished_before or watch.running:
            continue
        state = page.evaluate(
            """title => ({quiet: performance.now() - window.__bench.last, last: window.__bench.last,
                running: !!document.querySelector('[data-testid="stStatusWidget"]')?.innerText.includes('Running'),
                titled: [...document.querySelectorAll('h1')].some(h => h.innerText.trim() === title)})""",
            title,
        )
        if state["titled"] and not state["running"] and state["quiet"] >= QUIET_MS:
            return float(state["last"]) - since_ms
    raise TimeoutError(f"{title}: the page did not settle within {TIMEOUT_S:.0f} s")


@dataclass
class Results:
    times: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)

    def add(self, variant: str, mode: str, page: str, ms: float) -> None:
        self.times.setdefault((variant, mode, page), []).append(ms)


@contextmanager
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        try:
            yield browser
        finally:
            browser.close()


def _path(path: str, run: str | None) -> str:
    return f"run?run={run}" if path == "run" and run else path


def cold(browser: Any, url: str, path: str, title: str, run: str | None) -> float:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        context.add_init_script(OBSERVER)
        page = context.new_page()
        watch = _watch(page)
        page.goto(f"{url}/{_path(path, run)}")
        return settle(page, watch, 0, 0.0, title)
    finally:
        context.close()


def switches(browser: Any, url: str, pages: list[tuple[str, str, str]]) -> dict[str, float]:
    """Open the app on the overview, then click each page's sidebar link in turn (ending back on the overview)."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    timed: dict[str, float] = {}
    try:
        context.add_init_script(OBSERVER)
        page = context.new_page()
        watch = _watch(page)
        page.goto(f"{url}/")
        settle(page, watch, 0, 0.0, "Overview")
        for path, title, label in [*[p for p in pages if p[0]], *[p for p in pages if not p[0]]]:
            before = watch.finished
            link = page.locator('[data-testid="stSidebarNav"] a', has_text=label).first
            link.wait_for(timeout=10_000)
            since = page.evaluate("() => performance.now()")
            link.click()
            timed[path] = settle(page, watch, before, since, title)
    finally:
        context.close()
    return timed


def available(tree: Path | None, pages: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The pages a dashboard tree has (an older revision lacks the newer pages)."""
    if tree is None:
        return pages
    return [p for p in pages if (tree / "pages" / f"{p[0] or 'overview'}.py").exists()]


def measure(
    browser: Any,
    dashboards: dict[str, str],
    pages_of: dict[str, list[tuple[str, str, str]]],
    repeat: int,
    run: str | None,
) -> Results:
    results = Results()
    for _ in range(1):  # warm-up: each server imports its modules and fills its caches once
        for name, url in dashboards.items():
            for path, title, _label in pages_of[name]:
                cold(browser, url, path, title, run)
    for _ in range(repeat):
        for name, url in dashboards.items():
            for path, title, _label in pages_of[name]:
                results.add(name, "cold", path, cold(browser, url, path, title, run))
        for name, url in dashboards.items():
            for path, ms in switches(browser, url, pages_of[name]).items():
                results.add(name, "switch", path, ms)
    return results


def table(data_set: str, results: Results, variants: list[str], pages: list[tuple[str, str, str]]) -> str:
    header = ["page"] + [f"{mode} {variant}" for mode in ("cold", "switch") for variant in variants]
    lines = [
        f"### {data_set}: p50 ms (n={len(next(iter(results.times.values())))})",
        "",
        "| " + " | ".join(header) + " |",
    ]
    lines.append("|" + "---|" * len(header))
    for path, title, _label in pages:
        cells = [title]
        for mode in ("cold", "switch"):
            for variant in variants:
                times = results.times.get((variant, mode, path), [])
                cells.append(f"{statistics.median(times):,.0f}" if times else "–")
        lines.append("| " + " | ".join(cells) + " |")
    measured = [{p for (v, _m, p) in results.times if v == variant} for variant in variants]
    common = set.intersection(*measured) if measured else set()
    rows: list[tuple[str, set[str] | None]] = [("**p50 of all pages**", None)]
    if any(m != common for m in measured):
        rows.append(("**p50 of the pages all have**", common))
    for label, kept in rows:
        cells = [label]
        for mode in ("cold", "switch"):
            for variant in variants:
                every = [
                    t
                    for (v, m, p), ts in results.times.items()
                    if v == variant and m == mode and (kept is None or p in kept)
                    for t in ts
                ]
                cells.append(f"**{statistics.median(every):,.0f}**" if every else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def a_looping_run(collector: str) -> str | None:
    loops = httpx.get(f"{collector}/api/v1/loops", params={"limit": 1}, timeout=60).json().get("loops") or []
    if loops:
        return loops[0]["trace_id"]
    runs = httpx.get(f"{collector}/api/v1/runs", params={"limit": 1}, timeout=60).json().get("runs") or []
    return runs[0]["trace_id"] if runs else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="measurements per page and mode (p50 printed)")
    parser.add_argument("--baseline", help="also measure the dashboard of this git revision, side by side")
    parser.add_argument("--demo-runs", type=int, default=40)
    parser.add_argument("--no-demo", action="store_true", help="skip the demo data set")
    parser.add_argument("--big", action="store_true", help="also measure on a file of 1 M spans")
    parser.add_argument("--big-runs", type=int, default=100_000, help="runs (of 10 spans) in the big file")
    parser.add_argument("--big-db", help="the big DuckDB file (with --keep: reused when it exists)")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--pages", help="comma-separated url paths (overview is '')")
    parser.add_argument("--json", help="also write the raw times to this file")
    args = parser.parse_args(argv)
    pages = PAGES
    if args.pages is not None:
        chosen = {"" if p == "overview" else p for p in args.pages.split(",")}
        pages = [p for p in PAGES if p[0] in chosen or not p[0]]  # the overview is where switching starts

    workdir = Path(tempfile.mkdtemp(prefix="loopsight-bench-dashboard-"))
    processes: list[Process] = []
    raw: dict[str, Any] = {}
    try:
        trees: dict[str, Path | None] = {}
        if args.baseline:
            trees[f"before ({args.baseline})"] = baseline_tree(args.baseline, workdir)
        trees["after" if args.baseline else "this checkout"] = None
        data_sets: list[tuple[str, Path]] = []
        if not args.no_demo:
            data_sets.append((f"demo data ({args.demo_runs} runs)", workdir / "demo.duckdb"))
        if args.big:
            big = Path(args.big_db) if args.big_db else workdir / "big.duckdb"
            if not (args.keep and big.exists()):
                big.unlink(missing_ok=True)
                fill_big(big, args.big_runs)
            data_sets.append((f"{args.big_runs * 10:,} spans", big))
        with chromium() as browser:
            for data_set, db in data_sets:
                collector = start_collector(db, workdir)
                processes.append(collector)
                if db.name == "demo.duckdb":
                    fill_demo(collector.url, args.demo_runs)
                dashboards = {}
                for name, tree in trees.items():
                    dashboard = start_dashboard(collector.url, workdir, tree, name.split()[0])
                    processes.append(dashboard)
                    dashboards[name] = dashboard.url
                run = a_looping_run(collector.url)
                pages_of = {name: available(tree, pages) for name, tree in trees.items()}
                results = measure(browser, dashboards, pages_of, args.repeat, run)
                print(table(data_set, results, list(trees), pages), "\n", flush=True)
                raw[data_set] = {" / ".join(k): v for k, v in results.times.items()}
                for process in processes[-1 - len(trees) :]:
                    process.stop()
        if args.json:
            Path(args.json).write_text(json.dumps(raw, indent=1))
    finally:
        for process in processes:
            process.stop()
        if not (args.keep and args.big_db):
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
