"""Error classification: what kind of failure an exception is (``loopsight.error.class``).

The decisions by HTTP status, exception type name and error text are the vocabulary's
(:func:`loopsight.vocabulary.error_class_for`), the ones the collector applies to any
producer's ``error.type``: one failure gets one class whoever reports it. This module adds
what only a live exception carries: loopsight's own error classes, registered types and
classifiers, the status an HTTP client exception holds, and the exception's base classes.

The classes are ``transient`` (retry with backoff), ``invalid_argument`` (feed back with the
schema), ``permanent`` (feed back, do not retry), ``fatal`` (end the run), plus the silent
failures ``empty_result`` and ``garbage`` that tools mark on results.

Example:
    >>> classify(TimeoutError("slow"))
    ('TimeoutError', 'transient')
    >>> classify(TransientToolError("rate limited", error_type="429"))
    ('429', 'transient')
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from loopsight import checks
from loopsight.attributes import ERROR_CLASSES
from loopsight.errors import LoopsightError
from loopsight.vocabulary import class_for_exception_name, class_for_status, error_class_for

Classifier = Callable[[BaseException], "str | tuple[str, str] | None"]


class ToolError(LoopsightError):
    """Base of loopsight's own error classes; ``error_class`` says how loops should react.

    Example:
        >>> e = PermanentToolError("order 42 does not exist", error_type="not_found")
        >>> (e.error_type, e.error_class)
        ('not_found', 'permanent')
    """

    error_class: str = "permanent"

    def __init__(self, message: str = "", *, error_type: str | None = None, retry_after: float | None = None) -> None:
        checks.text("error_type", error_type, optional=True)
        checks.non_negative_number("retry_after", retry_after, optional=True)
        super().__init__(message)
        self.message = message
        self.error_type = error_type or type(self).__name__
        self.retry_after = retry_after


class TransientToolError(ToolError):
    """A failure worth retrying with backoff (timeout, rate limit, 5xx, network)."""

    error_class = "transient"


class InvalidArgumentError(ToolError):
    """The call was malformed (unknown tool, schema violation, bad JSON): correct and retry."""

    error_class = "invalid_argument"


class PermanentToolError(ToolError):
    """The call was well-formed but can never succeed as is (not found, business rejection)."""

    error_class = "permanent"


class FatalToolError(ToolError):
    """The run cannot go on (permission denied, forbidden, credentials revoked)."""

    error_class = "fatal"


_registered: dict[type, str] = {}
_classifiers: list[Classifier] = []


def register_error_class(exc_type: type[BaseException], error_class: str) -> None:
    """Map an exception type (and its subclasses) to an error class.

    Example:
        >>> class OutOfStock(Exception): ...
        >>> register_error_class(OutOfStock, "permanent")
        >>> classify(OutOfStock())
        ('OutOfStock', 'permanent')
    """
    if not (isinstance(exc_type, type) and issubclass(exc_type, BaseException)):
        raise TypeError(f"register_error_class needs an exception type, got {exc_type!r}")
    _check_class(error_class)
    _registered[exc_type] = error_class


def register_classifier(fn: Classifier) -> Classifier:
    """Add a function ``fn(exc) -> class | (type, class) | None`` consulted before the defaults.

    The most recently registered classifier is asked first; ``None`` passes. Usable as a
    decorator.

    Example:
        >>> @register_classifier
        ... def quota(exc):
        ...     return ("quota", "fatal") if "quota exceeded" in str(exc) else None
        >>> classify(RuntimeError("quota exceeded"))
        ('quota', 'fatal')
    """
    if not callable(fn):
        raise TypeError(f"register_classifier needs a callable, got {fn!r}")
    _classifiers.insert(0, fn)
    return fn


def unregister_classifier(fn: Classifier) -> None:
    """Remove a classifier added with :func:`register_classifier` (no error if absent)."""
    if fn in _classifiers:
        _classifiers.remove(fn)


def _check_class(error_class: str) -> None:
    if error_class not in ERROR_CLASSES:
        raise ValueError(f"unknown error class {error_class!r}; expected one of {ERROR_CLASSES}")


def status_code_of(exc: BaseException) -> int | None:
    """The HTTP status an exception carries (httpx, requests, openai, anthropic, aiohttp, urllib)."""
    for holder in (exc, getattr(exc, "response", None)):
        if holder is None:
            continue
        for attr in ("status_code", "status", "code"):
            value = getattr(holder, attr, None)
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
                return value
    return None


def classify(exc: BaseException) -> tuple[str, str]:
    """Return ``(error_type, error_class)`` for an exception; never raises.

    ``error_type`` is the HTTP status for HTTP errors (``"429"``), the ``error_type`` given to
    loopsight's own error classes, else the exception's type name.

    Example:
        >>> classify(ValueError("bad date"))
        ('ValueError', 'invalid_argument')
        >>> classify(ConnectionResetError())
        ('ConnectionResetError', 'transient')
    """
    try:
        return _classify(exc)
    except Exception:
        return type(exc).__name__, "permanent"


def _classify(exc: BaseException) -> tuple[str, str]:
    name = type(exc).__name__
    if isinstance(exc, ToolError):
        return exc.error_type, exc.error_class
    for fn in _classifiers:
        try:
            answer = fn(exc)
        except Exception:
            continue
        if answer is None:
            continue
        if isinstance(answer, tuple):
            etype, eclass = answer
            if eclass in ERROR_CLASSES:
                return str(etype), eclass
        elif answer in ERROR_CLASSES:
            return name, answer
    mro = type(exc).__mro__
    if _registered:
        for klass in mro:
            if klass in _registered:
                return name, _registered[klass]
    status = status_code_of(exc)
    if status is not None:
        return str(status), class_for_status(status)
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return name, "transient"
    if "httpx" in sys.modules and isinstance(exc, sys.modules["httpx"].TransportError):
        return name, "transient"
    for klass in mro:
        found = class_for_exception_name(klass.__name__)
        if found is not None:
            return name, found
    return name, error_class_for(name)


def error_of(
    value: BaseException | str, error_class: str | None = None, default_class: str = "permanent"
) -> tuple[str, str]:
    """``(error_type, error_class)`` for an exception or an error-type string."""
    if isinstance(value, BaseException):
        etype, eclass = classify(value)
    else:
        etype, eclass = str(value), default_class
    if error_class is not None:
        _check_class(error_class)
        eclass = error_class
    return etype, eclass
