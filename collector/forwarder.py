"""Forward accepted batches to an upstream OTLP/HTTP endpoint (Jaeger, Tempo, Langfuse, ...).

:meth:`Forwarder.offer` never blocks and never raises: batches wait in a bounded queue
(the oldest is dropped, and counted, when it is full) and one background thread posts
them as ``application/x-protobuf``, retrying 429/502/503/504 and connection errors with
exponential backoff (honouring ``Retry-After``) for up to ``max_elapsed`` seconds.

Each forwarded request carries a ``Via`` header (RFC 9110) naming this collector after the
collectors it came through: a request whose ``Via`` names this collector already came round a
loop (``--forward-to`` pointing at itself, two collectors forwarding to each other) and is
stored but not forwarded again (:meth:`Forwarder.came_round`).

Example:
    >>> forwarder = Forwarder("http://127.0.0.1:4318")  # doctest: +SKIP
    >>> forwarder.start(); forwarder.offer(request_bytes); forwarder.stop()  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from urllib.parse import urlsplit, urlunsplit

import httpx

log = logging.getLogger("loopsight.collector.forwarder")

RETRYABLE = frozenset({429, 502, 503, 504})


def forward_url(url: str) -> str:
    """``http://host:4318`` -> ``http://host:4318/v1/traces``; a URL with a path is kept.

    Example:
        >>> forward_url("http://127.0.0.1:4318")
        'http://127.0.0.1:4318/v1/traces'
        >>> forward_url("https://cloud.langfuse.com/api/public/otel/v1/traces")
        'https://cloud.langfuse.com/api/public/otel/v1/traces'
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"--forward-to {url!r} is not an http(s) URL")
    path = parts.path if parts.path not in ("", "/") else "/v1/traces"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def parse_headers(text: str | None) -> dict[str, str]:
    """``"Authorization=Basic abc,X-Scope=1"`` (the OTEL_EXPORTER_OTLP_HEADERS format) to a dict."""
    headers: dict[str, str] = {}
    for item in (text or "").split(","):
        if "=" in item:
            key, value = item.split("=", 1)
            headers[key.strip()] = value.strip()
    return headers


class Forwarder:
    """A bounded queue of serialized export requests and the thread that sends them."""

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        max_queue: int = 1000,
        max_queue_bytes: int = 64 * 1024 * 1024,
        timeout: float = 10.0,
        max_elapsed: float = 60.0,
        initial_backoff: float = 0.5,
        max_backoff: float = 10.0,
    ) -> None:
        self.url = forward_url(url)
        self.headers = {"Content-Type": "application/x-protobuf", **(headers or {})}
        self.max_queue = max_queue
        self.max_queue_bytes = max_queue_bytes
        self.timeout = timeout
        self.max_elapsed = max_elapsed
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.via = f"1.1 loopsight-{os.urandom(6).hex()}"
        """This collector's entry in a forwarded request's ``Via`` header."""
        self._queue: deque[tuple[bytes, str]] = deque()
        self._queued_bytes = 0
        self._cond = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.sent = 0
        self.dropped = 0
        self.failed = 0
        self.retries = 0

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="loopsight-forwarder", daemon=True)
            self._thread.start()

    def came_round(self, via: str | None) -> bool:
        """Whether a request with this ``Via`` header was forwarded by this collector before."""
        return via is not None and self.via in via

    def offer(self, body: bytes, via: str | None = None) -> None:
        """Queue one serialized ``ExportTraceServiceRequest`` (``via``: the ``Via`` header it came
        with); drops the oldest when full."""
        with self._cond:
            if self._stopping:
                self.dropped += 1
                return
            self._queue.append((body, f"{via}, {self.via}" if via else self.via))
            self._queued_bytes += len(body)
            while len(self._queue) > self.max_queue or (
                self._queued_bytes > self.max_queue_bytes and len(self._queue) > 1
            ):
                old, _ = self._queue.popleft()
                self._queued_bytes -= len(old)
                self.dropped += 1
            self._cond.notify()

    @property
    def queue_depth(self) -> int:
        return len(self._queue)

    def stop(self, timeout: float = 5.0) -> None:
        """Send what is queued for up to ``timeout`` seconds, then stop (the rest is dropped)."""
        with self._cond:
            self._stopping = True
            self._deadline = time.monotonic() + timeout
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout + self.timeout + 1)
        with self._cond:
            self.dropped += len(self._queue)
            self._queue.clear()
            self._queued_bytes = 0

    def _run(self) -> None:
        with httpx.Client(timeout=self.timeout) as client:
            while True:
                with self._cond:
                    while not self._queue and not self._stopping:
                        self._cond.wait()
                    if not self._queue or (self._stopping and time.monotonic() > self._deadline):
                        return
                    body, via = self._queue.popleft()
                    self._queued_bytes -= len(body)
                self._send(client, body, via)

    def _send(self, client: httpx.Client, body: bytes, via: str) -> None:
        started = time.monotonic()
        backoff = self.initial_backoff
        while True:
            delay = None
            try:
                response = client.post(self.url, content=body, headers={**self.headers, "Via": via})
                if response.status_code < 300:
                    self.sent += 1
                    return
                if response.status_code not in RETRYABLE:
                    log.warning(
                        "forwarding to %s refused: HTTP %d %s", self.url, response.status_code, response.text[:200]
                    )
                    self.failed += 1
                    return
                retry_after = response.headers.get("retry-after", "")
                delay = float(retry_after) if retry_after.replace(".", "", 1).isdigit() else None
                reason = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                reason = f"{type(exc).__name__}: {exc}"
            delay = min(delay if delay is not None else backoff, self.max_backoff)
            stopping = self._stopping and time.monotonic() + delay > self._deadline
            if time.monotonic() - started + delay > self.max_elapsed or stopping:
                log.warning("forwarding to %s failed, dropping the batch: %s", self.url, reason)
                self.failed += 1
                return
            self.retries += 1
            time.sleep(delay)
            backoff = min(backoff * 2, self.max_backoff)

    def prometheus_lines(self) -> list[str]:
        """Forwarding counters in Prometheus text format."""
        return [
            "# HELP loopsight_forward_batches_total Batches forwarded upstream, by outcome.",
            "# TYPE loopsight_forward_batches_total counter",
            f'loopsight_forward_batches_total{{outcome="sent"}} {self.sent}',
            f'loopsight_forward_batches_total{{outcome="failed"}} {self.failed}',
            f'loopsight_forward_batches_total{{outcome="dropped"}} {self.dropped}',
            "# HELP loopsight_forward_retries_total Retried forwarding attempts.",
            "# TYPE loopsight_forward_retries_total counter",
            f"loopsight_forward_retries_total {self.retries}",
            "# HELP loopsight_forward_queue_batches Batches waiting to be forwarded.",
            "# TYPE loopsight_forward_queue_batches gauge",
            f"loopsight_forward_queue_batches {len(self._queue)}",
        ]
