"""A derive pass that fails on the data: the pending traces derived in parts, a bad one set aside.

Both engines derive in DuckDB (the file itself, or ClickHouse's in-memory scratch), so the same
data raises the same errors (:data:`DATA_ERRORS`: an overflow, a bad cast). Such a failure is
deterministic: retried whole, one bad trace would hold back every later run for good. So the
pending traces are derived in halves, then halves of the halves that fail, and a trace that
fails on its own is set aside (logged; its spans kept, its runs left out of the per-run tables).
When no part succeeds, or too many traces fail alone, it is not the data: everything stays
pending for the next pass.

Example:
    >>> done = []
    >>> def derive(part):
    ...     if "bad" in part:
    ...         raise duckdb.ConversionException("out of range")
    ...     done.extend(part)
    >>> derive_in_parts(["a", "bad", "b", "c"], derive, lambda trace: None, duckdb.ConversionException("whole"))
    ['bad']
    >>> sorted(done)
    ['a', 'b', 'c']
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import duckdb

log = logging.getLogger("loopsight.collector")

DATA_ERRORS = (duckdb.ConversionException, duckdb.OutOfRangeException)
"""What the data can cause, unlike a full disk, a lost file or an unreachable server."""


def derive_in_parts(
    traces: Sequence[str],
    derive: Callable[[list[str]], None],
    set_aside: Callable[[str], None],
    failed: Exception,
) -> list[str] | None:
    """Derive ``traces``, which failed together with ``failed``, by parts with ``derive`` (which
    undoes its own part when it fails); the traces set aside with ``set_aside``, or ``None`` when
    they all stay pending. An error other than :data:`DATA_ERRORS` is raised, the traces not
    derived yet left pending.
    """
    half = len(traces) // 2
    parts = [list(traces[half:]), list(traces[:half])] if len(traces) > 1 else []
    alone: list[tuple[str, Exception]] = [(traces[0], failed)] if len(traces) == 1 else []
    succeeded = False
    while parts:
        part = parts.pop()
        if not part:
            continue
        try:
            derive(part)
        except DATA_ERRORS as exc:
            if len(part) > 1:
                half = len(part) // 2
                parts += [part[half:], part[:half]]
            else:
                alone.append((part[0], exc))
            continue
        succeeded = True
    if alone and (not succeeded or len(alone) > max(3, len(traces) // 10)):
        log.error(
            "deriving the per-run tables failed for %d of %d pending traces; they stay pending", len(alone), len(traces)
        )
        return None
    for trace_id, failure in alone:
        set_aside(trace_id)
        log.error(
            "trace %s cannot be derived (%s): its spans are kept, its runs are left out of the per-run tables",
            trace_id,
            failure,
        )
    return [trace_id for trace_id, _ in alone]
