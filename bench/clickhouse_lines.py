"""How much of the library is ClickHouse's own, at two revisions side by side (issue 23's figure).

    .venv/bin/python bench/clickhouse_lines.py 21eae5b~1 HEAD

A file counts when it is library code (not tests, bench, docs or deploy) and its path names
ClickHouse, or it is the SQL translation or the exporter-row reader (``stores/translate.py``,
``ingest/exporter.py``, ``stores/otel_rows.py`` before them). In the other library modules, a
top-level definition whose name says ClickHouse counts too (``loopsight/model.py::clickhouse_type``):
moving a ClickHouse rule into a neutral file does not make it neutral. Per revision: every line,
and the code lines (no blank lines, comments or docstrings). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import subprocess
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_LIBRARY = ("tests/", "bench/", "docs/", "deploy/", "recorder/", ".ci/")
NAMED = {"stores/translate.py", "ingest/exporter.py", "stores/otel_rows.py"}
SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def counted(path: str) -> bool:
    return (
        not path.startswith(NOT_LIBRARY) and path.endswith((".py", ".sql")) and ("clickhouse" in path or path in NAMED)
    )


def _docstrings(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        for statement in body if isinstance(body, list) else []:
            value = statement.value if isinstance(statement, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                lines.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
    return lines


def _code(path: str, text: str) -> set[int]:
    """Numbers of the lines holding code: for SQL, not blank and not a ``--`` comment; for Python, a token outside docstrings."""
    if path.endswith(".sql"):
        return {n for n, line in enumerate(text.splitlines(), 1) if line.strip() and not line.strip().startswith("--")}
    docs = _docstrings(ast.parse(text))
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in SKIPPED:
            lines.update(n for n in range(token.start[0], token.end[0] + 1) if n not in docs)
    return lines


def code_lines(path: str, text: str) -> int:
    """How many lines hold code (see :func:`_code`)."""
    return len(_code(path, text))


def _names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return [t.id for t in targets if isinstance(t, ast.Name)]


def named_definitions(path: str, text: str) -> dict[str, dict[str, int]]:
    """The top-level definitions of a module whose names say ClickHouse: lines and code lines of each."""
    found, code = {}, _code(path, text)
    for node in ast.parse(text).body:
        names = [n for n in _names(node) if "clickhouse" in n.lower()]
        if names:
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            span = range(first, (node.end_lineno or node.lineno) + 1)
            found[f"{path}::{names[0]}"] = {"lines": len(span), "code": len(code.intersection(span))}
    return found


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def measure(revision: str) -> dict[str, object]:
    files = {}
    for path in _git("ls-tree", "-r", "--name-only", revision).splitlines():
        if counted(path):
            text = _git("show", f"{revision}:{path}")
            files[path] = {"lines": len(text.splitlines()), "code": code_lines(path, text)}
        elif path.endswith(".py") and not path.startswith(NOT_LIBRARY):
            files |= named_definitions(path, _git("show", f"{revision}:{path}"))
    return {
        "revision": _git("rev-parse", "--short", revision).strip(),
        "lines": sum(f["lines"] for f in files.values()),
        "code": sum(f["code"] for f in files.values()),
        "files": files,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after", nargs="?", default="HEAD")
    args = parser.parse_args()
    before, after = measure(args.before), measure(args.after)
    ratios = {k: round(after[k] / before[k], 3) for k in ("lines", "code")}  # type: ignore[operator]
    print(json.dumps({"before": before, "after": after, "after_over_before": ratios}, indent=1))


if __name__ == "__main__":
    main()
