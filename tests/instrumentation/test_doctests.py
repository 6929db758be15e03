"""The examples in the public docstrings run and say what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "loopsight.hashing",
    "loopsight.checks",
    "loopsight.redaction",
    "loopsight.errors",
    "loopsight.vocabulary",
    "loopsight.prices",
    "errors",
    "content",
    "tokens",
    "context",
    "decorators",
    "handles",
    "setup",
    "testing",
    "nesting",
    "state",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, loopsight_spans):
    from loopsight import redaction
    from loopsight.instrumentation import errors

    saved = (dict(errors._registered), list(errors._classifiers), list(redaction.USER_PATTERNS))
    module = importlib.import_module(name if name.startswith("loopsight.") else f"loopsight.instrumentation.{name}")
    try:
        result = doctest.testmod(
            module, optionflags=doctest.ELLIPSIS, extraglobs={"loopsight": importlib.import_module("loopsight")}
        )
    finally:
        errors._registered.clear()
        errors._registered.update(saved[0])
        errors._classifiers[:] = saved[1]
        redaction.USER_PATTERNS[:] = saved[2]
    assert result.attempted > 0 or name in ("state", "nesting", "testing", "handles")
    assert result.failed == 0
