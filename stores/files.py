"""Checks on a store's file or folder before it is opened, and readable reasons when opening fails.

Example:
    >>> check_path("/nonexistent-dir/x.duckdb")
    Traceback (most recent call last):
    ...
    loopsight.stores.protocol.StoreError: cannot create /nonexistent-dir/x.duckdb: directory /nonexistent-dir does not exist
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from loopsight.errors import is_lock_conflict
from loopsight.stores.protocol import StoreError


def check_path(path: str) -> None:
    """Raise :class:`StoreError` unless ``path`` can be created or opened read-write as a DuckDB file."""
    directory = Path(path).resolve().parent
    if not directory.is_dir():
        raise StoreError(f"cannot create {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise StoreError(f"cannot write {path}: directory {directory} is not writable")
    if os.path.exists(path) and not os.access(path, os.R_OK | os.W_OK):
        raise StoreError(f"cannot open {path}: the file is not readable and writable by this user")
    if os.path.isfile(path) and os.path.getsize(path) > 0:
        with open(path, "rb") as file:
            header = file.read(12)
        # DuckDB 2 would open a .json or .csv file as a table instead of refusing it
        if header[8:12] != b"DUCK":
            raise StoreError(f"{path} is not a DuckDB database (or is damaged): it has no DuckDB file header")


THROUGH_COLLECTOR = (
    "read it through the collector: `loopsight runs --collector URL`, `loopsight ingest --collector URL`"
)


def check_unlocked(folder: str) -> None:
    """Raise :class:`StoreError` when another process has the chdb store in ``folder`` open (its
    engine holds an advisory lock on the folder's ``status`` file): asked before the engine, which
    would print its own error and say only that it failed.

    Example:
        >>> check_unlocked("/nonexistent")  # no lock file: nothing holds it
    """
    try:
        fd = os.open(os.path.join(folder, "status"), os.O_RDONLY)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise StoreError(
            f"{folder} is in use by another process (only one process may open a chdb store; {THROUGH_COLLECTOR})"
        ) from None
    finally:
        os.close(fd)  # closing releases a lock this test took


def explain_io_error(path: str, exc: Exception) -> str:
    """Why ``path`` could not be opened, in a user's words (a lock, a damaged file, ...)."""
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
    lowered = text.lower()
    if is_lock_conflict(text):
        return f"{path} is locked by another process (only one collector may own a DuckDB file; {THROUGH_COLLECTOR}): {text}"
    if "not a valid duckdb database" in lowered or "corrupt" in lowered or "magic" in lowered:
        return f"{path} is not a DuckDB database (or is damaged): {text}"
    return f"cannot open {path}: {text}"


KEY_BYTES = 32


def secret_key(path: str) -> bytes:
    """The store's secret key (``<path>.key``, made once, readable by its owner only): what keys
    the hashes of argument words and turns their vectors (:func:`loopsight.ingest.features.set_hash_key`).
    Without it a copy of the DuckDB file tells no argument word. An in-memory store gets a new key.

    Example:
        >>> import tempfile
        >>> path = tempfile.mkdtemp() + "/x.duckdb"
        >>> secret_key(path) == secret_key(path) and len(secret_key(path)) == KEY_BYTES
        True
    """
    if path in ("", ":memory:"):
        return os.urandom(KEY_BYTES)
    key_path = f"{path}.key"
    try:
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            key = Path(key_path).read_bytes()
        except OSError as exc:
            raise StoreError(f"cannot read the store's key {key_path}: {exc.strerror or exc}") from None
        if len(key) != KEY_BYTES:
            raise StoreError(
                f"{key_path} is not a loopsight key ({len(key)} bytes, not {KEY_BYTES}): "
                "restore it, or delete it to start a new one (loops spanning the change are then missed)"
            ) from None
        return key
    except OSError as exc:
        raise StoreError(f"cannot create the store's key {key_path}: {exc.strerror or exc}") from None
    key = os.urandom(KEY_BYTES)
    with os.fdopen(fd, "wb") as file:
        file.write(key)
    return key
