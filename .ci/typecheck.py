"""mypy over the ``loopsight`` package as the wheel lays it out.

The parts live in top-level folders that the wheel maps into ``loopsight.*``
(``[tool.hatch.build.targets.wheel.sources]``). mypy knows no such mapping, so this stages
the same mapping as symbolic links in a temporary directory (outside the checkout: a build
backend walking the tree must not meet a second copy of every folder), runs mypy there with
the project's configuration and cache, and prints the findings with the folders' own paths.

    .venv/bin/python .ci/typecheck.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    with open(ROOT / "pyproject.toml", "rb") as file:
        sources: dict[str, str] = tomllib.load(file)["tool"]["hatch"]["build"]["targets"]["wheel"]["sources"]
    stage = Path(tempfile.mkdtemp(prefix="loopsight-typecheck-"))
    try:
        return _check(stage, sources)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _check(stage: Path, sources: dict[str, str]) -> int:
    (stage / "loopsight").mkdir()
    for folder in (ROOT / "loopsight").iterdir():
        if folder.name != "__pycache__":
            os.symlink(folder, stage / "loopsight" / folder.name)
    staged = {}
    for source, target in sources.items():
        if source != "loopsight":
            os.symlink(ROOT / source, stage / target)
            staged[f"{target}/"] = f"{source}/"
    config = ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(ROOT / ".mypy_cache")]
    command = [sys.executable, "-m", "mypy", *config, "loopsight"]
    done = subprocess.run(command, cwd=stage, capture_output=True, text=True)
    for line in (done.stdout + done.stderr).splitlines():
        for target, source in sorted(staged.items(), key=lambda item: -len(item[0])):
            if line.startswith(target):
                line = source + line[len(target) :]
                break
        print(line)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
