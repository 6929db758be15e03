"""Imports run one way: core ← ingest ← stores ← analytics ← surfaces (read client, alerts, API, dashboard, CLI).

Read from the source (``ast``), so a new import that climbs a layer, closes a cycle or reaches
into another package's private names fails here, whatever the tests that run it.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Each module's layer: it may import its own package and anything of a lower layer.
CORE = {
    "attributes",
    "checks",
    "config",
    "errors",
    "format",
    "hashing",
    "redaction",
    "results",
    "vocabulary",
    "model",
    "prices",
}
LAYERS = {
    "core": 0,
    "instrumentation": 1,
    "ingest": 1,
    "react": 2,
    "migrations": 2,
    "stores": 3,
    "analytics": 4,
    "client": 5,
    "dashboard": 6,
    "alerts": 6,
    "collector": 7,
    "cli": 8,
    "facade": 1,  # ``import loopsight``: the public API, the instrumentation's names (see the test below)
}


def _unit(module: str) -> str:
    """The layer unit of ``loopsight.<part>...``: its part, or the core module / client / cli."""
    parts = module.split(".")
    if len(parts) == 1:
        return "facade"
    head = parts[1]
    if head in CORE:
        return "core"
    if head in ("client", "cli"):
        return head
    if head == "__main__":
        return "cli"
    return head


def _modules() -> dict[str, Path]:
    with open(ROOT / "pyproject.toml", "rb") as file:
        sources = tomllib.load(file)["tool"]["hatch"]["build"]["targets"]["wheel"]["sources"]
    found = {}
    for folder, target in sources.items():
        for path in (ROOT / folder).rglob("*.py"):
            relative = path.relative_to(ROOT / folder).with_suffix("")
            name = ".".join((*Path(target).parts, *relative.parts)).removesuffix(".__init__")
            found[name] = path
    return found


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of every ``loopsight`` import in the file, type-only ones included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "loopsight":
            if node.module == "loopsight":
                out += [(f"loopsight.{a.name}", []) for a in node.names]
            else:
                out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name.split(".")[0] == "loopsight"]
    return out


def test_no_module_imports_a_layer_above_its_own_or_beside_it() -> None:
    wrong = []
    modules = _modules()
    for name, path in modules.items():
        if name == "loopsight":
            continue  # the facade re-exports the instrumentation: test_the_facade_is_the_instrumentation
        own = _unit(name)
        for target, _ in _imports(path):
            # ``from loopsight import tool``: a name of the public facade, not a module
            other = _unit(target) if target in modules or target.count(".") > 1 else "facade"
            if other == own or LAYERS[other] < LAYERS[own]:
                continue
            wrong.append(f"{name} ({own}) imports {target} ({other})")
    assert wrong == []


def test_no_private_name_crosses_a_package() -> None:
    wrong = []
    for name, path in _modules().items():
        for target, names in _imports(path):
            if _unit(target) != _unit(name) or target.split(".")[:2] != name.split(".")[:2]:
                wrong += [f"{name} imports {target}.{n}" for n in names if n.startswith("_")]
    assert wrong == []


def test_ingest_is_pure() -> None:
    """The normalizer neither reaches a store nor imports a database engine."""
    engines = {"duckdb", "chdb", "clickhouse_connect", "sqlalchemy", "httpx", "starlette"}
    for name, path in _modules().items():
        if _unit(name) != "ingest":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                assert not {a.name.split(".")[0] for a in node.names} & engines, name
            elif isinstance(node, ast.ImportFrom) and node.module:
                assert node.module.split(".")[0] not in engines, name


def test_every_layer_unit_is_known() -> None:
    assert {_unit(name) for name in _modules()} <= set(LAYERS)
    assert "loopsight.stores.derive" in _modules() and "loopsight.ingest.normalize" in _modules()


def test_the_facade_is_the_instrumentation() -> None:
    """``import loopsight`` gives the decorators only: what react and users build on."""
    imported = {_unit(target) for target, _ in _imports(ROOT / "loopsight" / "__init__.py")}
    assert imported <= {"core", "instrumentation"}
