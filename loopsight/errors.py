"""The root of every exception loopsight raises.

Catch :class:`LoopsightError` to handle anything loopsight itself raises; each subclass
also keeps the built-in base that says what kind of failure it is (``ValueError`` for bad
input, ``LookupError`` for something missing, ...), so existing ``except`` clauses still work.

Example:
    >>> from loopsight.stores import StoreURLError
    >>> issubclass(StoreURLError, LoopsightError), issubclass(StoreURLError, ValueError)
    (True, True)
"""

from __future__ import annotations


class LoopsightError(Exception):
    """Base of loopsight's exceptions."""


def is_lock_conflict(message: str) -> bool:
    """Whether a DuckDB error says another process holds the file's lock (not merely a message
    naming a "block", as a damaged file's checksum error does).

    Example:
        >>> is_lock_conflict('IO Error: Could not set lock on file "x.duckdb": Conflicting lock is held in python (PID 7)')
        True
        >>> is_lock_conflict("Corrupt database file: computed checksum 1 does not match stored checksum 2 in block at location 12288")
        False
    """
    lowered = message.lower()
    return "could not set lock" in lowered or "conflicting lock" in lowered
