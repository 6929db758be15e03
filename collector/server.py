"""Run the collector process: open the store, serve OTLP/HTTP (+ query API), drain on exit.

Example:
    >>> serve(db="./loopsight.duckdb", http_port=4318)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import socket

import uvicorn

from loopsight.collector.app import Settings, create_app
from loopsight.collector.normalize import Limits
from loopsight.collector.store import Store

log = logging.getLogger("loopsight.collector")


class StartupError(Exception):
    """The collector cannot start (port taken, DB locked, ...); the message says why."""


def _check_port(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise StartupError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def serve(
    db: str,
    host: str = "127.0.0.1",
    http_port: int = 4318,
    grpc_port: int = 4317,
    token: str | None = None,
    capture_content: bool = False,
    max_body_bytes: int = 16 * 1024 * 1024,
    rules: str | None = None,
    alert_interval: float = 30.0,
    retention: str | None = None,
    forward_to: str | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM, then drain the write queue and close the file."""
    _check_port(host, http_port)
    store = Store.open(db)
    evaluator = None
    if rules:
        from loopsight.alerts import Evaluator, RulesError

        try:
            evaluator = Evaluator(store.reader, rules, alert_interval)
        except RulesError as exc:
            store.close()
            raise StartupError(f"invalid alert rules: {exc}") from None
    settings = Settings(max_body_bytes=max_body_bytes, token=token, limits=Limits(capture_content=capture_content))
    app = create_app(store, settings)
    config = uvicorn.Config(app, host=host, port=http_port, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    log.info("collector listening on http://%s:%d, storing in %s", host, http_port, db)
    if evaluator is not None:
        evaluator.start()
    try:
        server.run()
    finally:
        if evaluator is not None:
            evaluator.stop()
        store.close()
