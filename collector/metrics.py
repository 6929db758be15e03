"""Collector counters and their Prometheus text rendering for ``GET /metrics``.

Other parts add gauges by appending a callable returning Prometheus text lines to
:attr:`Metrics.extra_metrics` (the alert evaluator adds its rule gauges that way).

Example:
    >>> m = Metrics()
    >>> m.spans_received("http", 3)
    >>> m.spans_rejected("invalid trace_id or span_id length", 1)
    >>> "loopsight_spans_received_total" in m.render()
    True
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import duckdb

from loopsight.stores.duckdb_store import Store
from loopsight.stores.protocol import COMMIT_BUCKETS

REASON_LABELS = {
    "invalid trace_id or span_id length": "invalid_id",
    "all-zero trace_id or span_id": "invalid_id",
    "invalid parent_span_id length": "invalid_id",
    "start time out of range": "invalid_time",
}
"""The metric's ``reason`` label of each reason a span is rejected for (``partial_success`` gives the
sentence); a sentence not listed here is labelled by :func:`reason_label`."""


def reason_label(reason: str) -> str:
    """The short label of a rejection reason: ``invalid_id``, ``invalid_time``, ``unreadable_span``, or
    ``reason`` itself when it is already a label (``queue_full``, ``store_error``, ...).

    Example:
        >>> reason_label("all-zero trace_id or span_id"), reason_label("span could not be read: KeyError")
        ('invalid_id', 'unreadable_span')
        >>> reason_label("queue_full")
        'queue_full'
    """
    label = REASON_LABELS.get(reason)
    if label is not None:
        return label
    if reason.startswith("span could not be read"):
        return "unreadable_span"
    return reason if reason.replace("_", "").isalnum() and reason.islower() else "other"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """Thread-safe ingest counters; :meth:`render` adds the store's and forwarder's figures."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._received: Counter[str] = Counter()
        self._accepted: Counter[str] = Counter()
        self._rejected: Counter[str] = Counter()
        self._requests: Counter[tuple[str, str]] = Counter()
        self.store: Any = None
        self.forwarder: Any = None
        self.retention: Any = None
        self.memory_budget: Any = None  # a loopsight.collector.memory.MemoryBudget
        self.extra_metrics: list[Callable[[], str]] = []

    def spans_received(self, transport: str, count: int) -> None:
        with self._lock:
            self._received[transport] += count

    def spans_accepted(self, transport: str, count: int) -> None:
        with self._lock:
            self._accepted[transport] += count

    def spans_rejected(self, reason: str, count: int) -> None:
        """Spans not kept, by reason (``invalid_id``, ``queue_full``, ``store_error``, ...)."""
        if count:
            with self._lock:
                self._rejected[reason_label(reason)] += count

    def request(self, transport: str, outcome: str) -> None:
        """One export request answered: ``ok``, ``partial``, ``bad_request``, ``too_large``, ..."""
        with self._lock:
            self._requests[(transport, outcome)] += 1

    def render(self) -> str:
        """Prometheus text exposition format 0.0.4."""
        with self._lock:
            received, accepted = dict(self._received), dict(self._accepted)
            rejected, requests = dict(self._rejected), dict(self._requests)
        out: list[str] = []

        def family(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> None:
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} {kind}")
            for labels, value in samples:
                out.append(f"{name}{labels} {value:g}" if isinstance(value, float) else f"{name}{labels} {value}")

        transports = ("http", "grpc")
        family(
            "loopsight_spans_received_total",
            "counter",
            "Spans decoded from export requests.",
            [(f'{{transport="{t}"}}', received.get(t, 0)) for t in transports],
        )
        family(
            "loopsight_spans_accepted_total",
            "counter",
            "Spans acknowledged after commit.",
            [(f'{{transport="{t}"}}', accepted.get(t, 0)) for t in transports],
        )
        family(
            "loopsight_spans_rejected_total",
            "counter",
            "Spans not kept, by reason.",
            [(f'{{reason="{_label(r)}"}}', n) for r, n in sorted(rejected.items())] or [('{reason="none"}', 0)],
        )
        family(
            "loopsight_export_requests_total",
            "counter",
            "Export requests answered, by transport and outcome.",
            [(f'{{transport="{t}",outcome="{_label(o)}"}}', n) for (t, o), n in sorted(requests.items())],
        )
        store = self.store
        if store is not None:
            stats = store.stats
            family(
                "loopsight_spans_stored_total",
                "counter",
                "Spans inserted into the store (duplicates excluded).",
                [("", stats.rows_committed)],
            )
            family(
                "loopsight_spans_duplicate_total",
                "counter",
                "Spans delivered again and skipped.",
                [("", getattr(stats, "duplicates", 0))],
            )
            family(
                "loopsight_write_queue_batches", "gauge", "Batches waiting for the writer.", [("", store.queue_depth)]
            )
            family(
                "loopsight_write_queue_spans",
                "gauge",
                "Spans waiting for the writer.",
                [("", getattr(store, "queued_rows", 0))],
            )
            buckets = getattr(stats, "commit_bucket_counts", None)
            if buckets is not None:
                out.append("# HELP loopsight_commit_seconds Time to commit one group of batches.")
                out.append("# TYPE loopsight_commit_seconds histogram")
                cumulative = 0
                for bound, count in zip(COMMIT_BUCKETS, buckets, strict=False):
                    cumulative += count
                    out.append(f'loopsight_commit_seconds_bucket{{le="{bound:g}"}} {cumulative}')
                out.append(f'loopsight_commit_seconds_bucket{{le="+Inf"}} {stats.commits}')
                out.append(f"loopsight_commit_seconds_sum {stats.commit_seconds_sum:.6f}")
                out.append(f"loopsight_commit_seconds_count {stats.commits}")
            family(
                "loopsight_commit_failures_total",
                "counter",
                "Commits that failed; their requests were answered with an error.",
                [("", getattr(stats, "failed_commits", 0))],
            )
            pending = getattr(store, "derive_pending_commits", None)
            if pending is not None:  # the DuckDB store counts the commits its next pass derives
                family(
                    "loopsight_derive_pending_commits",
                    "gauge",
                    "Commits whose traces the next derive pass will derive.",
                    [("", pending)],
                )
            family(
                "loopsight_derive_passes_total",
                "counter",
                "Derive passes completed (run ids, steps, per-run tables).",
                [("", stats.derive_passes)],
            )
            family(
                "loopsight_derive_failures_total",
                "counter",
                "Derive passes rolled back after an error; their traces stay pending for the next one "
                "(after an error in the data, they are derived in parts at once).",
                [("", stats.failed_derives)],
            )
            family(
                "loopsight_derive_set_aside_traces_total",
                "counter",
                "Traces whose derivation failed on their own: spans kept, runs left out of the per-run tables.",
                [("", stats.set_aside_traces)],
            )
            family(
                "loopsight_derive_seconds_total",
                "counter",
                "Time spent in completed derive passes.",
                [("", float(stats.derive_seconds_sum))],
            )
            size = getattr(store, "size_bytes", None)
            if size is not None:
                family("loopsight_db_size_bytes", "gauge", "Database file plus write-ahead log.", [("", size())])
            duckdb_bytes = _duckdb_memory(store)
            if duckdb_bytes is not None:
                family(
                    "loopsight_duckdb_memory_bytes",
                    "gauge",
                    "Memory DuckDB's buffer manager holds, by tag (duckdb_memory()).",
                    [(f'{{tag="{_label(tag)}"}}', n) for tag, n in duckdb_bytes] or [('{tag="none"}', 0)],
                )
        budget = self.memory_budget
        if budget is not None:
            family(
                "loopsight_memory_budget_bytes",
                "gauge",
                "The collector's memory budget (--memory-budget) and its split.",
                [
                    ('{part="total"}', budget.total),
                    ('{part="duckdb"}', budget.duckdb_bytes),
                    ('{part="inflight"}', budget.inflight_bytes),
                ],
            )
        resident = _resident_bytes()
        if resident is not None:
            family(
                "loopsight_process_resident_bytes",
                "gauge",
                "Resident memory of the collector process, by kind (/proc/self/status).",
                [(f'{{kind="{kind}"}}', n) for kind, n in resident],
            )
        if self.forwarder is not None:
            out.extend(self.forwarder.prometheus_lines())
        if self.retention is not None:
            out.extend(self.retention.prometheus_lines())
        for extra in list(self.extra_metrics):
            try:
                text = extra()
            except Exception as exc:  # a broken gauge must not take /metrics down
                out.append(f"# extra metrics failed: {_label(str(exc))}")
                continue
            if text:
                out.append(text.rstrip("\n"))
        return "\n".join(out) + "\n"


def _resident_bytes() -> list[tuple[str, int]] | None:
    """``[("total", ...), ("anon", ...), ("file", ...), ("peak", ...)]`` on Linux, else ``None``."""
    wanted = {"VmRSS:": "total", "RssAnon:": "anon", "RssFile:": "file", "VmHWM:": "peak"}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            lines = [line.split() for line in status if line.split(":", 1)[0] + ":" in wanted]
    except OSError:
        return None
    return [(wanted[parts[0]], int(parts[1]) * 1024) for parts in lines]


def _duckdb_memory(store: Any) -> list[tuple[str, int]] | None:
    """DuckDB's own accounting for a DuckDB store: ``[(tag, bytes), ...]`` for the tags holding memory."""
    if not isinstance(store, Store):
        return None
    try:
        con = store.reader(derived=False)  # the derived tables are not read here: no derive pass
        try:
            rows = con.execute(
                "SELECT tag, memory_usage_bytes FROM duckdb_memory() WHERE memory_usage_bytes > 0"
            ).fetchall()
        finally:
            con.close()
    except duckdb.Error:  # closed while shutting down: no gauge rather than a broken /metrics
        return None
    return rows
