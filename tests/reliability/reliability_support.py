"""Helpers for the reliability tests: real OTel SDK clients, stored-row checksums, RSS.

Everything runs against real collector processes (``start_collector`` from tests/conftest.py)
and real DuckDB files; the helpers only observe.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource as SdkResource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult


class _Counting:
    """Mixin for the real OTLP exporters: remember which span ids the collector acknowledged."""

    def _init_counts(self) -> None:
        self.lock = threading.Lock()
        self.acked: set[str] = set()
        self.failed: set[str] = set()
        self.exports = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = super().export(spans)  # type: ignore[misc]
        ids = {f"{s.context.span_id:016x}" for s in spans}
        with self.lock:
            self.exports += 1
            (self.acked if result is SpanExportResult.SUCCESS else self.failed).update(ids)
        return result


class CountingExporter(_Counting, OTLPSpanExporter):
    """The real OTLP/HTTP exporter (its own retry/backoff), counting acknowledged spans."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._init_counts()


class CountingGrpcExporter(_Counting, GrpcSpanExporter):
    """The real OTLP/gRPC exporter (retries UNAVAILABLE), counting acknowledged spans."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._init_counts()


@dataclass
class SdkClient:
    """A TracerProvider with BatchSpanProcessor + CountingExporter pointed at a collector."""

    provider: TracerProvider
    exporter: _Counting
    created: set[str] = field(default_factory=set)

    def emit(self, n: int, name: str = "execute_tool search") -> None:
        tracer = self.provider.get_tracer("reliability")
        for _ in range(n):
            with tracer.start_as_current_span(
                name, attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}
            ) as span:
                self.created.add(f"{span.get_span_context().span_id:016x}")


def sdk_client(
    url: str,
    token: str | None = None,
    timeout: float = 60.0,
    queue: int = 200_000,
    batch: int = 256,
    delay_ms: int = 50,
    grpc_target: str | None = None,
) -> SdkClient:
    """A real SDK pipeline (OTLP/HTTP, or gRPC to ``grpc_target``); exporter retries left as shipped."""
    auth = {"Authorization": f"Bearer {token}"} if token else None
    exporter: _Counting
    if grpc_target:
        exporter = CountingGrpcExporter(
            endpoint=grpc_target,
            insecure=True,
            timeout=timeout,
            headers={"authorization": auth["Authorization"]} if auth else None,
        )
    else:
        exporter = CountingExporter(endpoint=f"{url}/v1/traces", timeout=timeout, headers=auth)
    provider = TracerProvider(resource=SdkResource.create({"service.name": "reliability"}))
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_queue_size=queue, max_export_batch_size=batch, schedule_delay_millis=delay_ms)
    )
    return SdkClient(provider, exporter)


def stored(db_path: str | Path, sql: str = 'SELECT "SpanId" FROM spans') -> list[tuple]:
    """Rows of ``sql`` from the file, opened read-only (no collector may hold it)."""
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def rows_checksum(db_path: str | Path, span_ids: Iterable[str] | None = None) -> str:
    """sha256 over every column of the stored rows (optionally only ``span_ids``), in a fixed order."""
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        rows = con.execute('SELECT * EXCLUDE (ingested_at) FROM spans ORDER BY "TraceId", "SpanId"').fetchall()
        names = [d[0] for d in con.description]
    finally:
        con.close()
    keep = set(span_ids) if span_ids is not None else None
    digest = hashlib.sha256()
    for row in rows:
        if keep is None or row[names.index("SpanId")] in keep:
            digest.update(repr(row).encode())
    return digest.hexdigest()


def rss_kib(pid: int, field_name: str = "VmRSS") -> int:
    """Resident set (``VmRSS``) or its high-water mark (``VmHWM``) of ``pid`` in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    raise LookupError(field_name)


def listening_sockets(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state owned by ``pid`` or its children."""
    pids = {pid}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            ppid = next(int(row.split()[1]) for row in status.read_text().splitlines() if row.startswith("PPid:"))
        except (OSError, StopIteration):
            continue
        if ppid == pid:
            pids.add(int(status.parent.name))
    inodes: set[str] = set()
    for p in pids:
        try:
            for fd in Path(f"/proc/{p}/fd").iterdir():
                try:
                    target = str(fd.readlink())
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    found = []
    for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if parts[3] != "0A" or parts[9] not in inodes:  # 0A = LISTEN
                continue
            addr_hex, port_hex = parts[1].split(":")
            found.append((_decode_addr(addr_hex, v6), int(port_hex, 16)))
    return found


def _decode_addr(addr_hex: str, v6: bool) -> str:
    import ipaddress

    raw = bytes.fromhex(addr_hex)
    if not v6:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    return str(ipaddress.IPv6Address(words))


def umount(path: Path) -> None:
    """Unmount (lazily, so a lingering handle cannot fail the test teardown)."""
    import subprocess

    subprocess.run(["umount", "-l", str(path)], capture_output=True)
