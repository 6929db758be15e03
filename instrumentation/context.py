"""Carry the current trace context (and the current run) into other threads.

Threads do not inherit ``contextvars``; without this, spans opened in a worker thread
start new traces instead of nesting under the tool call or run that started them.

Example:
    >>> import threading, loopsight
    >>> t = threading.Thread(target=loopsight.wrap_context(print), args=("hi",))
    >>> t.start(); t.join()
    hi
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def wrap_context(fn: Callable[..., T]) -> Callable[..., T]:
    """Bind ``fn`` to a snapshot of the caller's context; each call runs in a fresh copy of
    that snapshot, so the result can be called from several threads at once."""
    snapshot = contextvars.copy_context()

    @functools.wraps(fn)
    def run_in_context(*args: Any, **kwargs: Any) -> T:
        return snapshot.copy().run(fn, *args, **kwargs)

    return run_in_context


class ContextThreadPoolExecutor(ThreadPoolExecutor):
    """A ``ThreadPoolExecutor`` whose tasks run in the submitter's context.

    Example:
        >>> with ContextThreadPoolExecutor(max_workers=2) as pool:
        ...     list(pool.map(len, ["ab", "c"]))
        [2, 1]
    """

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        context = contextvars.copy_context()
        return super().submit(context.run, fn, *args, **kwargs)
