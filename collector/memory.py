"""One memory budget for the collector process, split between DuckDB and the requests in flight.

The collector's resident memory is the process itself (interpreter, pyarrow, DuckDB, gRPC and
the open database: about 190 MiB idle, 267 MiB at the peak of a 2x overload besides DuckDB's
pool and the requests in flight, hence :data:`PROCESS_RESERVE`), DuckDB's buffer pool (its
``memory_limit``) and the export requests in flight (bodies, their decoded protobuf and Arrow
tables waiting for the writer, bounded by :class:`~loopsight.collector.admission.Admission`).
``--memory-budget`` / ``LOOPSIGHT_MEMORY_BUDGET`` (default :data:`DEFAULT_BUDGET`) gives the
whole figure; what is left after the reserve goes 75 % to DuckDB and 25 % to requests in
flight. DuckDB needs at least :data:`MIN_DUCKDB`: with 61–67 MiB its group commits failed with
"Out of Memory" under a 2x overload (answered 503 and retried, but catch-up took 3x longer),
with 96 MiB they did not. ``LOOPSIGHT_MEMORY_LIMIT`` (DuckDB) and
``LOOPSIGHT_MAX_INFLIGHT_BYTES`` still set their part directly when given.

Sizes take ``B``, ``KB``/``KiB``, ``MB``/``MiB``, ``GB``/``GiB``, all binary (1 MB = 2**20 bytes,
the unit ``ps`` and ``/proc`` report RSS in).

Example:
    >>> budget = MemoryBudget.parse("400MB")
    >>> budget.duckdb_limit, budget.inflight_bytes // 2**20
    ('96MiB', 32)
    >>> MemoryBudget.parse("512MB").duckdb_limit
    '180MiB'
    >>> MemoryBudget.parse("300MB")
    Traceback (most recent call last):
    ...
    ValueError: 300MB is too small: the collector needs 272 MiB for itself, 96 MiB for DuckDB and 32 MiB for requests in flight (at least 400MB in all)
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

MIB = 2**20
DEFAULT_BUDGET = "400MB"
PROCESS_RESERVE = 272 * MIB
MIN_DUCKDB = 96 * MIB
DUCKDB_SHARE = 0.75

_UNITS = {
    "": 1,
    "b": 1,
    "k": 2**10,
    "kb": 2**10,
    "kib": 2**10,
    "m": MIB,
    "mb": MIB,
    "mib": MIB,
    "g": 2**30,
    "gb": 2**30,
    "gib": 2**30,
    "t": 2**40,
    "tb": 2**40,
    "tib": 2**40,
}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")


def parse_size(text: str) -> int:
    """``"384MB"`` -> bytes (binary units); raises ``ValueError`` with a readable message.

    Example:
        >>> parse_size("1.5GiB") == 3 * 2**29
        True
    """
    match = _SIZE.fullmatch(text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a size: a number and a unit of B, KB, MB, GB or TB (e.g. 384MB, 1GB)")
    return int(float(match.group(1)) * _UNITS[unit])


@dataclass(frozen=True)
class MemoryBudget:
    """The split of one budget: DuckDB's ``memory_limit`` and the admission byte budget."""

    total: int
    duckdb_bytes: int
    inflight_bytes: int

    @classmethod
    def parse(cls, text: str) -> MemoryBudget:
        total = parse_size(text)
        working = total - PROCESS_RESERVE
        duckdb_bytes = max(0, int(working * DUCKDB_SHARE)) // MIB * MIB
        if duckdb_bytes < MIN_DUCKDB:
            least = PROCESS_RESERVE + int(MIN_DUCKDB / DUCKDB_SHARE)
            raise ValueError(
                f"{text} is too small: the collector needs {PROCESS_RESERVE // MIB} MiB for itself, "
                f"{MIN_DUCKDB // MIB} MiB for DuckDB and {(least - PROCESS_RESERVE - MIN_DUCKDB) // MIB} MiB "
                f"for requests in flight (at least {least // MIB}MB in all)"
            )
        return cls(total, duckdb_bytes, working - duckdb_bytes)

    @classmethod
    def from_env(cls, option: str | None = None, environ: Mapping[str, str] | None = None) -> MemoryBudget:
        """The budget from ``--memory-budget`` (``option``) or ``LOOPSIGHT_MEMORY_BUDGET``, with
        ``LOOPSIGHT_MEMORY_LIMIT`` / ``LOOPSIGHT_MAX_INFLIGHT_BYTES`` overriding their part."""
        env = os.environ if environ is None else environ
        text = option or env.get("LOOPSIGHT_MEMORY_BUDGET", "").strip() or DEFAULT_BUDGET
        try:
            budget = cls.parse(text)
        except ValueError as exc:
            raise ValueError(f"--memory-budget / LOOPSIGHT_MEMORY_BUDGET: {exc}") from None
        duckdb_text = env.get("LOOPSIGHT_MEMORY_LIMIT", "").strip()
        if duckdb_text:
            try:
                budget = cls(budget.total, parse_size(duckdb_text), budget.inflight_bytes)
            except ValueError as exc:
                raise ValueError(f"LOOPSIGHT_MEMORY_LIMIT: {exc}") from None
        return budget

    @property
    def duckdb_limit(self) -> str:
        """DuckDB's ``memory_limit`` setting for this budget."""
        return f"{self.duckdb_bytes // MIB}MiB"


def use_system_allocator() -> None:
    """Allocate Arrow buffers with malloc instead of pyarrow's default mimalloc pool, which kept
    ~20 MiB more resident under overload (``bench/soak.py``, see docs/reliability.md)."""
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
