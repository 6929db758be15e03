"""The wheel as a user gets it: built from the sdist, installed with ``[all]`` in a fresh venv.

Everything below runs the installed copy, never this checkout (which ``make test`` installs
editable): every module imports, ``--version`` is pyproject's version, and a collector started
from the venv receives ``loopsight demo``'s runs and lists them through ``loopsight runs``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest
from ports import free_port
from processes import stop_process

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.wheel, pytest.mark.slow]

# Scripts that a host runs (Streamlit its pages, Alembic its env, pytest its plugin) are
# compiled, not imported: outside their host they have nothing to run against.
IMPORT_ALL = """
import importlib, importlib.util, json, pkgutil, py_compile
import loopsight
HOSTED = ("loopsight.dashboard.pages.", "loopsight.migrations.env", "loopsight.instrumentation.testing")
names = sorted(m.name for m in pkgutil.walk_packages(loopsight.__path__, "loopsight.") if not m.name.endswith("__main__"))
failed = {}
for name in names:
    try:
        if name.startswith(HOSTED):
            py_compile.compile(importlib.util.find_spec(name).origin, doraise=True)
        else:
            importlib.import_module(name)
    except Exception as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps({"file": loopsight.__file__, "modules": names, "failed": failed}))
"""


def _run(*args: str | Path, timeout: float = 600, **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kwargs)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel built from the sdist, with ``[all]``."""
    work = tmp_path_factory.mktemp("wheel")
    _run(sys.executable, "-m", "build", "--outdir", work / "dist", ROOT, timeout=900)
    wheels = list((work / "dist").glob("loopsight-*.whl"))
    sdists = list((work / "dist").glob("loopsight-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, list((work / "dist").iterdir())
    env = work / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", f"{wheels[0]}[all]", "-c", ROOT / "constraints.txt", timeout=900)
    return env


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_", "PYTHON"))}


def test_every_module_of_the_installed_package_imports(installed: Path, tmp_path: Path) -> None:
    done = _run(installed / "bin" / "python", "-c", IMPORT_ALL, cwd=tmp_path, env=_clean_env())
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["file"].startswith(str(installed)), report["file"]
    assert report["failed"] == {}
    with open(ROOT / "pyproject.toml", "rb") as file:
        mapped = tomllib.load(file)["tool"]["hatch"]["build"]["targets"]["wheel"]["sources"]
    expected = set()
    for folder, target in mapped.items():
        for path in (ROOT / folder).rglob("*.py"):
            module = (Path(target) / path.relative_to(ROOT / folder)).with_suffix("").as_posix().replace("/", ".")
            expected.add(module.removesuffix(".__init__"))
    expected -= {"loopsight", "loopsight.__main__"}
    assert "loopsight.react.llm.openai" in expected
    assert sorted(expected - set(report["modules"])) == []


def test_version_is_the_one_written_in_pyproject(installed: Path, tmp_path: Path) -> None:
    with open(ROOT / "pyproject.toml", "rb") as file:
        version = tomllib.load(file)["project"]["version"]
    done = _run(installed / "bin" / "loopsight", "--version", cwd=tmp_path, env=_clean_env())
    assert done.stdout.strip() == f"loopsight {version}"


def test_installed_collector_receives_the_demo_and_lists_its_runs(installed: Path, tmp_path: Path) -> None:
    bin_dir = installed / "bin"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = _clean_env()
    log = open(tmp_path / "collector.log", "wb")
    collector = subprocess.Popen(
        [
            bin_dir / "loopsight",
            "collector",
            "--db",
            tmp_path / "wheel.duckdb",
            "--http-port",
            str(port),
            "--grpc-port",
            "0",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
        env=env,
    )
    try:
        _run(
            bin_dir / "python",
            "-c",
            f"import httpx, time\nfor _ in range(600):\n    try:\n        httpx.get('{url}/healthz').raise_for_status(); break\n    except Exception: time.sleep(0.05)",
            cwd=tmp_path,
            env=env,
        )
        _run(bin_dir / "loopsight", "demo", "--endpoint", url, "--runs", "6", "--speed", "50", cwd=tmp_path, env=env)
        done = _run(bin_dir / "loopsight", "runs", "--collector", url, "--json", "--limit", "50", cwd=tmp_path, env=env)
    finally:
        stop_process(collector)
        log.close()
    runs = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert len(runs) == 6, (tmp_path / "collector.log").read_text()
    assert all(run["agent"] and run["steps"] >= 1 for run in runs)
