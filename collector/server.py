"""Run the collector process: store, OTLP/HTTP + query API, OTLP/gRPC, background work.

``serve()`` returns after SIGINT/SIGTERM once both receivers have stopped, the write queue
is drained and the file is closed; it raises :class:`StartupError` (a readable message,
no traceback) when it cannot start: port taken, DB locked, directory not writable, bad
``--retention`` or ``--forward-to``, invalid alert rules, an invalid ``--prices`` file.

Example:
    >>> serve(db="./loopsight.duckdb", http_port=4318, grpc_port=4317)  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import uvicorn

from loopsight.collector.admission import Admission
from loopsight.collector.app import Settings, create_app
from loopsight.collector.forwarder import Forwarder, parse_headers
from loopsight.collector.grpc_receiver import start_grpc
from loopsight.collector.logs import configure_logging
from loopsight.collector.memory import MemoryBudget, use_system_allocator
from loopsight.collector.metrics import Metrics
from loopsight.collector.ports import StartupError, check_distinct_ports, check_port
from loopsight.collector.retention import Retention, parse_retention
from loopsight.config import host_port
from loopsight.ingest.embedding import default_model
from loopsight.ingest.features import set_hash_key
from loopsight.ingest.normalize import Limits
from loopsight.prices import PriceBook, PricesError
from loopsight.stores import StoreError
from loopsight.stores.duckdb_store import Store

log = logging.getLogger("loopsight.collector")


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: ``serve()`` decides when to stop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _store_clock(store: Any) -> Any:
    """The store's clock now (None when it cannot say: the counters then start at the first reading)."""
    from loopsight.analytics.metrics import store_clock

    try:
        con = store.reader()
        try:
            return store_clock(con)
        finally:
            con.close()
    except Exception as exc:  # a store that fails here fails visibly on the first request
        log.error("reading the store's clock failed: %s", exc)
        return None


def _is_self(url: str, host: str, port: int) -> bool:
    """Whether ``url`` reaches the OTLP/HTTP listener on ``host``:``port`` of this machine by name."""
    parts = urlsplit(url)
    local = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "::", host}
    return parts.hostname in local and (parts.port or (443 if parts.scheme == "https" else 80)) == port


def serve(
    db: str,
    host: str = "127.0.0.1",
    http_port: int = 4318,
    grpc_port: int = 4317,
    token: str | None = None,
    limits: Limits | None = None,
    max_body_bytes: int = 16 * 1024 * 1024,
    rules: str | None = None,
    alert_interval: float = 30.0,
    retention: str | None = None,
    forward_to: str | None = None,
    *,
    retention_interval: float | None = None,
    memory_limit: str | None = None,
    store_url: str | None = None,
    memory_budget: str | None = None,
    prices: str | None = None,
    dashboard_url: str | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM, then drain the write queue and close the file.

    ``grpc_port=0`` leaves OTLP/gRPC off. ``memory_budget`` (``--memory-budget``, default
    ``LOOPSIGHT_MEMORY_BUDGET`` or 400MB) is split between DuckDB's ``memory_limit`` and the
    in-flight byte budget (:mod:`~loopsight.collector.memory`); ``memory_limit`` overrides
    DuckDB's part. ``retention_interval`` (seconds between retention passes) defaults to
    ``LOOPSIGHT_RETENTION_INTERVAL`` (300); ``LOOPSIGHT_CHECKPOINT_THRESHOLD`` (128MB)
    bounds the write-ahead log, and with it the spans held in memory between checkpoints. ``store_url`` (``--store``) stores in
    ClickHouse (``clickhouse://``, ``chdb://``) or another DuckDB file instead of ``db``.
    ``prices`` (``--prices FILE``) is a price file over the bundled table (docs/cost.md); the
    store reprices every model it holds with it as it opens. ``dashboard_url``: where the alerts'
    deep links point (default ``http://127.0.0.1:8501/``).
    """
    configure_logging()
    try:
        keep = parse_retention(retention) if retention else None
        forwarder = (
            Forwarder(forward_to, headers=parse_headers(os.environ.get("LOOPSIGHT_FORWARD_HEADERS")))
            if forward_to
            else None
        )
        if forwarder is not None and _is_self(forwarder.url, host, http_port):
            raise ValueError(f"--forward-to {forward_to} is this collector's own OTLP/HTTP address")
        interval = (
            retention_interval
            if retention_interval is not None
            else float(os.environ.get("LOOPSIGHT_RETENTION_INTERVAL", "300"))
        )
        budget = MemoryBudget.from_env(memory_budget)
        admission = Admission.from_env(max_bytes=budget.inflight_bytes)
        book = PriceBook.from_file(prices)
    except PricesError as exc:
        raise StartupError(f"invalid price file: {exc}") from None
    except ValueError as exc:
        raise StartupError(str(exc)) from None
    if max_body_bytes <= 0:
        raise StartupError("--max-body-bytes must be positive")
    check_distinct_ports({"--http-port": http_port, "--grpc-port": grpc_port})
    check_port(host, http_port, "OTLP/HTTP")
    use_system_allocator()
    if grpc_port:
        check_port(host, grpc_port, "OTLP/gRPC")
    try:
        if store_url:
            from loopsight.stores import StoreURLError, open_writer

            try:
                store = open_writer(store_url, prices=book)
            except StoreURLError as exc:
                raise StartupError(str(exc)) from None
        else:
            store = Store.open(
                db,
                memory_limit=memory_limit or budget.duckdb_limit,
                checkpoint_threshold=os.environ.get("LOOPSIGHT_CHECKPOINT_THRESHOLD", "128MB"),
                prices=book,
            )
        set_hash_key(store.secret_key())  # argument words hashed and vectors turned by the store's own key
        default_model()  # the word vectors (0.5 s of CPU) before the first request, not inside it
    except StoreError as exc:
        raise StartupError(str(exc)) from None

    started: list[Any] = []
    try:
        metrics = Metrics()
        metrics.store = store
        metrics.memory_budget = budget
        metrics.forwarder = forwarder
        evaluator = None
        counting_since = _store_clock(store)  # /metrics counts the cost of the calls received from now on
        if rules:
            from loopsight.alerts import Evaluator, RulesError

            try:
                evaluator = Evaluator(store.reader, rules, alert_interval, dashboard_url, totals_since=counting_since)
            except RulesError as exc:
                raise StartupError(f"invalid alert rules: {exc}") from None
            metrics.extra_metrics.append(lambda: "\n".join(evaluator.prometheus_lines()))
        else:
            from loopsight.alerts import AgentGauges

            agent_gauges = AgentGauges(store.reader, max_age_seconds=alert_interval, totals_since=counting_since)
            metrics.extra_metrics.append(lambda: "\n".join(agent_gauges.prometheus_lines()))
        settings = Settings(max_body_bytes=max_body_bytes, token=token, limits=limits or Limits(), admission=admission)
        app = create_app(store, settings, metrics=metrics, forwarder=forwarder)
        app.state.evaluator = evaluator
        if forwarder is not None:
            forwarder.start()
            started.append(forwarder)
        grpc_server = None
        if grpc_port:
            try:
                grpc_server = start_grpc(
                    app.state.receiver, host, grpc_port, token=token, max_message_bytes=max_body_bytes
                )
            except OSError as exc:
                raise StartupError(str(exc)) from None
        if keep is not None:
            metrics.retention = Retention(store, keep, interval=interval)
            metrics.retention.start()
            started.append(metrics.retention)
        if evaluator is not None:
            evaluator.start()
            started.append(evaluator)

        config = uvicorn.Config(
            app,
            host=host,
            port=http_port,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=30,
        )
        server = _Server(config)
        stop_signals = _stop_on_signals(server)
        log.info(
            "collector started",
            extra={
                "event": "started",
                "http": f"http://{host_port(host, http_port)}",
                "grpc": host_port(host, grpc_port) if grpc_port else None,
                "store": _store_label(db, store_url),
                "retention": retention,
                "forward_to": forwarder.url if forwarder else None,
                "prices": book.describe(),
            },
        )
        try:
            server.run()
        finally:
            stop_signals()
            if grpc_server is not None:
                grpc_server.stop(grace=10).wait(15)
        if not server.started:
            raise StartupError(f"cannot listen on {host_port(host, http_port)} for OTLP/HTTP")
    finally:
        for component in reversed(started):
            if component is not forwarder:
                component.stop()
        queued = store.queued_rows
        store.close()
        if forwarder is not None:
            forwarder.stop(timeout=2.0)
        log.info(
            "collector stopped",
            extra={"event": "stopped", "drained_spans": queued, "stored_total": store.stats.rows_committed},
        )


def _store_label(db: str, store_url: str | None) -> str:
    """What the start-up log names as the store: the DuckDB path, or ``--store`` with its password hidden."""
    if not store_url:
        return db
    from loopsight.stores import parse_store_url

    return parse_store_url(store_url).redacted()


def _stop_on_signals(server: uvicorn.Server) -> Any:
    """SIGINT/SIGTERM ask uvicorn to finish in-flight requests and return."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {}

    def handle(signum: int, frame: Any) -> None:
        log.info("stopping", extra={"event": "stopping", "signal": signal.Signals(signum).name})
        if server.should_exit:
            server.force_exit = True
        server.should_exit = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, handle)

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore
