"""The Streamlit dashboard: where agents stall, loop and burn tokens, at a glance.

:func:`launch` serves it (``loopsight dashboard`` calls it); pages read their data through
:mod:`loopsight.dashboard.data` from the collector's query API, a DuckDB file or a store URL.

Example:
    >>> from loopsight.dashboard import launch
    >>> launch(collector="http://127.0.0.1:4318", port=8501)  # doctest: +SKIP
    0
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from loopsight.dashboard.data import COLLECTOR_ENV, DB_ENV, DEFAULT_COLLECTOR_URL, STORE_ENV, TOKEN_ENV

APP = Path(__file__).with_name("entry") / "app.py"

__all__ = ["APP", "launch", "streamlit_command"]


def streamlit_command(port: int = 8501, host: str = "127.0.0.1") -> list[str]:
    """The ``streamlit run`` command line: headless, bound to ``host:port``, no telemetry.

    Example:
        >>> streamlit_command(8600)[3], streamlit_command(8600)[8]
        ('run', '8600')
        >>> "--runner.postScriptGC" in streamlit_command()
        True
    """
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
        "--server.runOnSave",
        "false",
        "--global.developmentMode",
        "false",
        # Streamlit collects garbage (all generations) after every script run, holding the lock the
        # websocket's thread needs while the page's last messages wait: ~0.1-0.3 s a run with
        # pandas and Altair loaded. Python's own collector still runs.
        "--runner.postScriptGC",
        "false",
        # The viewer's menu stays (its settings switch light / dark / the system's theme); no theme is forced.
        "--client.toolbarMode",
        "viewer",
    ]


def launch(
    collector: str | None = None,
    db: str | None = None,
    port: int = 8501,
    token: str | None = None,
    host: str = "127.0.0.1",
    store: str | None = None,
) -> int:
    """Serve the dashboard until interrupted; return Streamlit's exit code (2 if it is not installed).

    Reads the collector at ``collector`` (default ``LOOPSIGHT_COLLECTOR_URL`` or
    ``http://127.0.0.1:4318``, with ``token`` as bearer token), or the DuckDB file ``db``
    read-only when given (no collector may hold it), or the store URL ``store``
    (``clickhouse://…``, ``chdb:///dir``, ``duckdb:///file``).

    Example:
        >>> launch(db="./copy-of-prod.duckdb", port=8600)  # doctest: +SKIP
    """
    if sum(1 for given in (collector, db, store) if given) > 1:
        raise ValueError("give one source: a collector URL, a DuckDB file or a store URL, not both")
    if importlib.util.find_spec("streamlit") is None or importlib.util.find_spec("altair") is None:
        print("the dashboard needs Streamlit and Altair: pip install 'loopsight[dashboard]'", file=sys.stderr)
        return 2
    env = dict(os.environ)
    env.pop(DB_ENV, None)
    env.pop(STORE_ENV, None)
    if store:
        env[STORE_ENV] = store
    elif db:
        env[DB_ENV] = str(Path(db).expanduser().resolve())
    else:
        env[COLLECTOR_ENV] = collector or env.get(COLLECTOR_ENV) or DEFAULT_COLLECTOR_URL
    if token:
        env[TOKEN_ENV] = token
    env["STREAMLIT_BROWSER_GATHER_USAGE_STATS"] = "false"
    process = subprocess.Popen(streamlit_command(port, host), env=env)
    # SIGTERM (docker stop, `loopsight up`, a supervisor) must stop Streamlit too, not orphan it.
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return process.wait()
    except KeyboardInterrupt:
        process.terminate()
        try:
            return process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
