"""``loopsight ingest FILE...``: load OTLP files into the store, with a progress bar.

Formats (a gzipped file is decompressed first):

- OTLP JSON: one ``{"resourceSpans": [...]}`` object;
- JSON lines: one such object per line, as the OpenTelemetry Collector's file exporter
  writes them;
- protobuf: one ``ExportTraceServiceRequest``, or a stream of them each preceded by its
  length as a 4-byte big-endian integer (the file exporter's ``format: proto``).

A ``.json``, ``.jsonl`` or ``.ndjson`` file (also ``.gz``), or one that starts with ``{`` or
``[``, is read as JSON; anything else as protobuf. An empty file is an error. A bad line,
array item or protobuf message is skipped and the rest of its file loaded, and so is a stream
whose last message is cut short (a file exporter's file still being written).

Example:
    >>> summary = ingest_files(["traces.jsonl"], "loopsight.duckdb")  # doctest: +SKIP
    >>> summary.accepted  # doctest: +SKIP
    1200
"""

from __future__ import annotations

import contextlib
import json
import signal
import struct
import threading
import time
import zlib
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from loopsight.config import traces_url
from loopsight.errors import LoopsightError
from loopsight.ingest.features import set_hash_key
from loopsight.ingest.normalize import Limits
from loopsight.ingest.otlp import JSON, BadRequest, decode_request, inflate, parse_protobuf
from loopsight.ingest.pipeline import prepare
from loopsight.prices import PriceBook
from loopsight.stores import QueueFull
from loopsight.stores.duckdb_store import Store

_NO_LIMIT = 1 << 62


MESSAGES_PER_FILE = 20
"""Messages shown for one file; the rest are counted (a file of a million bad lines prints 21 lines)."""


@dataclass
class IngestSummary:
    """What ``ingest_files`` did."""

    files: int = 0
    requests: int = 0
    accepted: int = 0
    stored: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    """What could not be loaded, each message naming its file (and line, item or message):
    at most :data:`MESSAGES_PER_FILE` a file."""
    failed_files: list[str] = field(default_factory=list)
    """The files skipped or loaded only in part, each once."""
    seconds: float = 0.0
    collector: str | None = None
    """Where the spans were sent (:func:`send_files`), or None for a store opened here."""
    shown: Counter[str] = field(default_factory=Counter)
    """Per file, the messages in :attr:`errors`."""
    unshown: Counter[str] = field(default_factory=Counter)
    """Per file, the messages beyond :data:`MESSAGES_PER_FILE`, counted only."""

    @property
    def duplicates(self) -> int:
        return self.accepted - self.stored

    def skip(self, path: str | Path, message: str) -> None:
        """Record what of ``path`` could not be loaded."""
        path = str(path)
        if path not in self.failed_files:
            self.failed_files.append(path)
        if self.shown[path] < MESSAGES_PER_FILE:
            self.shown[path] += 1
            self.errors.append(message)
        else:
            self.unshown[path] += 1

    def __str__(self) -> str:
        if self.collector:
            text = (
                f"{self.accepted} spans read from {self.files} file(s) in {self.seconds:.1f} s: "
                f"{self.stored} acknowledged by {self.collector}"
            )
        else:
            text = (
                f"{self.accepted} spans read from {self.files} file(s) in {self.seconds:.1f} s: "
                f"{self.stored} stored, {self.duplicates} already present"
            )
        if self.rejected:
            text += ", rejected: " + ", ".join(f"{n} {reason}" for reason, n in sorted(self.rejected.items()))
        if self.errors:
            text += "\n" + "\n".join(f"skipped: {error}" for error in self.errors)
        for path, n in self.unshown.items():
            text += f"\nskipped: {path}: {n} more part(s) not shown"
        return text

    def __rich__(self) -> str:
        return escape(str(self))


_JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")


_GZIP_CHUNK = 1 << 16  # a broken first member keeps what its chunks before the break gave


def _read(path: Path) -> tuple[bytes, str | None]:
    """The file's bytes (decompressed when gzipped) and, for a gzip stream cut short or broken
    part way, what stopped it: what came before still loads, as a plain file cut short keeps
    its whole lines. A file of several gzip members is read whole."""
    data = path.read_bytes()
    if data[:2] != b"\x1f\x8b":
        return data, None
    parts: list[bytes] = []
    why = None
    try:
        for piece in inflate(data, 16 + zlib.MAX_WBITS, first=_GZIP_CHUNK):
            parts.append(piece)
    except zlib.error as exc:
        why = f"not a valid gzip file: {exc}"
    except EOFError:
        why = "the gzip file is cut short (it ends before its end-of-stream marker)"
    decompressed = b"".join(parts)
    if why is not None and not decompressed.strip():
        raise BadRequest(f"{path}: {why}")
    return decompressed, why


def _is_json(path: Path, data: bytes) -> bool:
    name = path.name.lower().removesuffix(".gz")
    return name.endswith(_JSON_SUFFIXES) or data.lstrip()[:1] in (b"{", b"[")


_REQUEST_KEYS = ("resourceSpans", "resource_spans")


def _json_line(line: bytes, first: bool) -> bool:
    """Whether ``line`` says its file is JSON lines: the first line is JSON, or any line a whole
    export request (a file whose first line is corrupt is still JSON lines: its other lines load;
    a line of a pretty-printed document is never a whole request)."""
    if not first and not any(key.encode() in line for key in _REQUEST_KEYS):
        return False
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return first or (isinstance(value, dict) and any(key in value for key in _REQUEST_KEYS))


def _json_requests(path: Path, data: bytes) -> Iterator[ExportTraceServiceRequest | BadRequest]:
    try:
        parsed = json.loads(data)
    except RecursionError:
        raise BadRequest(f"{path}: JSON nested too deeply") from None
    except ValueError as whole_file:
        lines = [(number, line) for number, line in enumerate(data.splitlines(), 1) if line.strip()]
        if not any(_json_line(line, first=number == lines[0][0]) for number, line in lines):
            # not JSON lines either: the whole file's error says where it breaks
            raise BadRequest(f"{path}: not valid JSON: {whole_file}") from None
        for number, line in lines:  # each line is a request of its own: a bad one costs only itself
            try:
                yield decode_request(line, JSON, None, _NO_LIMIT)
            except BadRequest as exc:
                yield BadRequest(f"{path}:{number}: {exc}")
        return
    items = parsed if isinstance(parsed, list) else [parsed]
    for number, item in enumerate(items, 1):
        try:
            yield decode_request(json.dumps(item).encode(), JSON, None, _NO_LIMIT)
        except BadRequest as exc:
            if len(items) == 1:
                raise BadRequest(f"{path}: {exc}") from None
            yield BadRequest(f"{path} (item {number}): {exc}")


def _framed(data: bytes) -> tuple[list[bytes], bytes]:
    """Split a length-prefixed stream into its whole messages and what is left after them (a
    message cut short: empty when ``data`` is exactly such a stream)."""
    frames, offset = [], 0
    while offset + 4 <= len(data):
        (size,) = struct.unpack_from(">I", data, offset)
        if offset + 4 + size > len(data):
            break
        frames.append(data[offset + 4 : offset + 4 + size])
        offset += 4 + size
    return frames, data[offset:]


def iter_requests(path: str | Path) -> Iterator[ExportTraceServiceRequest | BadRequest]:
    """Every export request in one file, in order.

    A part that cannot be read — a JSON line, an item of a JSON array, a message of a protobuf
    stream, the stream's last message cut short (a file still being written) — is yielded as the
    ``BadRequest`` naming it, and the parts after it are still read. A file that cannot be read
    at all raises ``BadRequest`` naming it.
    """
    path = Path(path)
    data, cut = _read(path)
    if not data.strip():
        raise BadRequest(f"{path}: empty file")
    try:
        yield from _requests(path, data)
    except BadRequest as exc:
        raise BadRequest(f"{exc}; {cut}" if cut else str(exc)) from None
    if cut:
        yield BadRequest(f"{path}: {cut}; what came before it was read")


def _requests(path: Path, data: bytes) -> Iterator[ExportTraceServiceRequest | BadRequest]:
    if _is_json(path, data):
        yield from _json_requests(path, data)
        return
    frames, rest = _framed(data)
    # A length under 16 MiB starts with a zero byte, which no protobuf message starts with: a file
    # that begins so and does not end on a message's end is a stream cut short.
    if not frames or (rest and data[:1] != b"\0"):
        frames, rest = [data], b""
    for number, frame in enumerate(frames, 1):
        try:
            request = parse_protobuf(frame)
        except (DecodeError, RecursionError) as exc:
            if len(frames) == 1 and not rest:
                raise BadRequest(f"{path}: not OTLP JSON, JSON lines or protobuf: {exc}") from None
            yield BadRequest(f"{path} (message {number}): not an OTLP protobuf message: {exc}")
            continue
        yield request
    if rest:
        yield BadRequest(f"{path} (message {len(frames) + 1}): cut short, {len(rest)} bytes where the file ends")


def ingest_files(
    paths: list[str],
    db: str,
    progress: bool = True,
    limits: Limits | None = None,
    store_url: str | None = None,
    prices: PriceBook | None = None,
) -> IngestSummary:
    """Load every file into the store at ``db`` (which no running collector may hold).

    ``store_url`` (``duckdb:///...``, ``chdb:///...``, ``clickhouse://...``) wins over ``db``.
    ``prices`` (``--prices FILE``; default the bundled table) prices the models, as the collector's does.

    A file that cannot be read is reported in ``summary.errors`` (one message per file, naming
    it) and the others still load.
    Raises :class:`~loopsight.stores.duckdb_store.StoreError` when the store cannot be opened.
    """
    summary = IngestSummary()
    started = time.perf_counter()
    with _interrupt_deferred() as interrupted_early:  # a migration cut short prints its driver's traceback
        if store_url:
            from loopsight.stores import open_writer

            store = open_writer(store_url, prices=prices)
        else:
            store = Store.open(db, prices=prices)
    if interrupted_early():
        store.close()
        raise SendStopped("interrupted while opening the store: nothing loaded", summary, interrupted=True)
    set_hash_key(store.secret_key())  # as the collector does: one key per store
    sizes = {p: Path(p).stat().st_size for p in paths}
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[spans]} spans"),
        disable=not progress,
        transient=False,
    )
    pending: list[tuple[Future[int], int]] = []
    interrupted, whole = False, 0
    try:
        with bar:
            task = bar.add_task("ingest", total=sum(sizes.values()) or 1, spans=0)
            for path in paths:
                bar.update(task, description=Path(path).name)
                summary.files += 1
                before = summary.requests
                try:
                    for request in iter_requests(path):
                        if isinstance(request, BadRequest):
                            summary.skip(path, str(request))
                            continue
                        summary.requests += 1
                        prepared = prepare(request, limits)
                        summary.rejected.update(prepared.rejected)
                        if prepared.table is None:
                            continue
                        pending.append((_submit(store, prepared.table, pending, summary), prepared.accepted))
                        summary.accepted += prepared.accepted
                        bar.update(task, spans=summary.accepted)
                except BadRequest as exc:
                    loaded = summary.requests - before
                    summary.skip(
                        path,
                        f"{exc} (stopped there: its first {loaded} request(s) were loaded)" if loaded else str(exc),
                    )
                except OSError as exc:
                    summary.skip(path, f"{path}: {exc.strerror or exc}")
                bar.advance(task, sizes[path])
                whole += 1
            _settle(pending, summary, 0)
    except KeyboardInterrupt:
        interrupted = True  # what was queued is committed by close(), then said
    finally:
        store.close()
    summary.stored = store.stats.rows_committed
    summary.seconds = time.perf_counter() - started
    if interrupted:
        again = "; loading a file again skips the spans already stored" if isinstance(store, Store) else ""
        raise SendStopped(
            f"interrupted: {summary.stored} span(s) committed to the store before the stop "
            f"({whole} of {len(paths)} file(s) read whole{again})",
            summary,
            interrupted=True,
        )
    return summary


@contextlib.contextmanager
def _interrupt_deferred() -> Iterator[Callable[[], bool]]:
    """Hold Ctrl-C (SIGINT) back while the block runs; yields whether one came (main thread only)."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    previous = signal.signal(signal.SIGINT, lambda *_: came.append(1))
    try:
        yield lambda: bool(came)
    finally:
        signal.signal(signal.SIGINT, previous)


def _submit(store: Store, table: object, pending: list[tuple[Future[int], int]], summary: IngestSummary) -> Future[int]:
    while True:
        try:
            return store.submit(table)
        except QueueFull:
            _settle(pending, summary, max(len(pending) // 2, 1) if pending else 0)
            if not pending:
                time.sleep(0.01)


def _settle(pending: list[tuple[Future[int], int]], summary: IngestSummary, keep: int) -> None:
    """Wait for all but the newest ``keep`` batches (errors propagate as StoreError)."""
    while len(pending) > keep:
        future, _ = pending.pop(0)
        future.result()


RETRY_STATUSES = frozenset((429, 502, 503, 504))

MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""Largest request :func:`send_files` sends: a quarter of the collector's default body limit
(``--max-body-bytes``, 16 MiB). A bigger one is split by its spans; a collector with a lower
limit answers 413 and the request is halved until it fits."""


class SendStopped(LoopsightError):
    """Sending or loading stopped part way (Ctrl-C, the collector gone): the message says how many
    spans the collector acknowledged, or the store committed, before; :attr:`summary` holds them."""

    def __init__(self, message: str, summary: IngestSummary, interrupted: bool = False) -> None:
        super().__init__(message)
        self.summary = summary
        self.interrupted = interrupted


def _span_count(request: ExportTraceServiceRequest) -> int:
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


def _half(request: ExportTraceServiceRequest, first: bool) -> ExportTraceServiceRequest:
    """The first (or second) half of ``request``'s spans, each under its own resource and scope."""
    middle = _span_count(request) // 2
    out = ExportTraceServiceRequest()
    number = 0
    for rs in request.resource_spans:
        kept_rs = None
        for ss in rs.scope_spans:
            spans = [span for i, span in enumerate(ss.spans, number) if (i < middle) == first]
            number += len(ss.spans)
            if not spans:
                continue
            if kept_rs is None:
                kept_rs = out.resource_spans.add(resource=rs.resource, schema_url=rs.schema_url)
            kept_rs.scope_spans.add(scope=ss.scope, schema_url=ss.schema_url).spans.extend(spans)
    return out


def _pieces(request: ExportTraceServiceRequest, limit: int) -> list[ExportTraceServiceRequest]:
    """``request`` split by its spans into requests of at most ``limit`` bytes (a span bigger than that goes alone)."""
    if request.ByteSize() <= limit or _span_count(request) < 2:
        return [request]
    return _pieces(_half(request, True), limit) + _pieces(_half(request, False), limit)


def _refusal(answer: Any) -> str:
    """A refused request's answer on one line: its status and the OTLP ``Status`` message the
    collector sent (protobuf or JSON), else the first line of whatever body came."""
    from google.rpc import status_pb2

    message = ""
    kind = answer.headers.get("content-type", "")
    try:
        if "protobuf" in kind:
            message = status_pb2.Status.FromString(answer.content).message
        elif "json" in kind:
            body = answer.json()
            message = str(body.get("message") or body.get("error") or "") if isinstance(body, dict) else ""
    except (DecodeError, ValueError):
        message = ""
    if not message:
        message = next((line.strip() for line in answer.text.splitlines() if line.strip()), "")
    message = " ".join(message.split())
    reason = answer.reason_phrase or ""
    text = f"{answer.status_code} {reason}".strip()
    return f"{text}: {message[:200]}" if message else text


def send_files(
    paths: list[str],
    url: str,
    token: str | None = None,
    progress: bool = True,
    timeout: float = 60.0,
    max_request_bytes: int = MAX_REQUEST_BYTES,
) -> IngestSummary:
    """Send every file's export requests to a running collector's ``/v1/traces`` (OTLP/HTTP
    protobuf), as an SDK exporter would: the collector normalizes and stores them, so this
    works while it holds its DuckDB file. A request above ``max_request_bytes`` is sent in parts
    (and one the collector answers 413, too large, in halves); busy answers (429, 503, ...) are
    retried after their ``Retry-After``; a request the collector refuses is reported with the
    file, on one line, and the others go on.

    Raises :class:`SendStopped` (a :class:`~loopsight.errors.LoopsightError`) when the collector
    cannot be reached or on Ctrl-C, saying how many spans it had acknowledged.

    Example:
        >>> send_files(["traces.jsonl"], "http://127.0.0.1:4318").stored  # doctest: +SKIP
        1200
    """
    import httpx
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    endpoint = traces_url(url)
    headers = {"Content-Type": "application/x-protobuf"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    summary = IngestSummary(collector=url)
    started = time.perf_counter()

    def acknowledged() -> str:
        return f"{summary.stored} span(s) acknowledged by {url} before the stop"

    with httpx.Client(timeout=timeout, headers=headers) as client:
        try:
            for path in paths:
                summary.files += 1
                try:
                    number = 0
                    for request in iter_requests(path):
                        if isinstance(request, BadRequest):
                            summary.skip(path, str(request))
                            continue
                        number += 1
                        summary.accepted += _span_count(request)
                        queue = deque(_pieces(request, max_request_bytes))
                        while queue:
                            piece = queue.popleft()
                            spans = _span_count(piece)
                            summary.requests += 1
                            for attempt in range(20):
                                try:
                                    answer = client.post(endpoint, content=piece.SerializeToString())
                                except httpx.HTTPError as exc:
                                    raise SendStopped(
                                        f"cannot send to {endpoint}: {exc}; {acknowledged()}", summary
                                    ) from None
                                if answer.status_code not in RETRY_STATUSES:
                                    break
                                time.sleep(min(float(answer.headers.get("Retry-After") or 0.2 * (attempt + 1)), 5.0))
                            if answer.status_code == 413 and spans > 1:  # a lower --max-body-bytes: halve and resend
                                queue.extendleft((_half(piece, False), _half(piece, True)))
                                continue
                            if answer.status_code != 200:
                                summary.skip(path, f"{path} (request {number}): {_refusal(answer)}")
                                summary.rejected[f"http_{answer.status_code}"] += spans
                                continue
                            partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
                            summary.stored += spans - partial.rejected_spans
                            if partial.rejected_spans:
                                summary.rejected["rejected by the collector"] += partial.rejected_spans
                except BadRequest as exc:
                    summary.skip(path, str(exc))
                except OSError as exc:
                    summary.skip(path, f"{path}: {exc.strerror or exc}")
        except KeyboardInterrupt:
            raise SendStopped(f"interrupted: {acknowledged()}", summary, interrupted=True) from None
    summary.seconds = time.perf_counter() - started
    return summary
