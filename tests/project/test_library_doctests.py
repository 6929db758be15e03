"""The examples in the library's docstrings are true: each one not marked ``+SKIP`` runs and gives what it shows."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The wheel's packages (each folder mapped into loopsight, as pyproject.toml says)
PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]["sources"]
# Streamlit pages run when imported; migration scripts run inside alembic; the decorators'
# examples need the span capture, so tests/instrumentation/test_doctests.py runs them.
NOT_IMPORTED = (
    "loopsight.dashboard.pages",
    "loopsight.migrations.versions",
    "loopsight.migrations.env",
    "loopsight.instrumentation",
)


def _modules() -> list[str]:
    names = set()
    for package in PACKAGES.values():
        name = package.replace("/", ".")
        names.add(name)
        path = importlib.import_module(name).__path__
        names |= {info.name for info in pkgutil.walk_packages(path, f"{name}.")}
    return sorted(n for n in names if not n.startswith(NOT_IMPORTED) and not n.endswith("__main__"))


MODULES = _modules()


def test_the_library_s_modules_are_found() -> None:
    assert {"loopsight.stores.translate", "loopsight.ingest.normalize", "loopsight.model"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name: str) -> None:
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, name):
        runner.run(test, out=report.append)
    failed, attempted = runner.summarize(verbose=False)
    assert failed == 0, f"{failed} of {attempted} examples in {name} fail:\n" + "".join(report)
