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
