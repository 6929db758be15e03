"""Every benchmark under bench/ still starts: its imports resolve and its ``--help`` answers.

A restructure that moves a module breaks the scripts nothing else imports (``make bench`` failed
on ``bench_detection.py`` and ``bench_clickhouse.py`` after issue 23's moves, unnoticed). The
scripts that need packages loopsight does not depend on say so in their docstring and are
checked only when those are installed.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
# script: the packages it needs beyond loopsight's own (a probe run in a scratch venv)
OPTIONAL = {"probe_sentence_model.py": ("onnxruntime",), "react_token_estimator.py": ("tiktoken",)}
# the scripts (a load module such as load_with_content.py is imported by them, not run)
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if p.name != "run_all.py" and "__main__" in p.read_text())


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_benchmark_answers_help(script: str) -> None:
    missing = [name for name in OPTIONAL.get(script, ()) if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"{script} needs {', '.join(missing)}")
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--help"], capture_output=True, text=True, timeout=120, cwd=BENCH.parent
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage" in done.stdout.lower()


def test_make_bench_names_only_scripts_that_exist() -> None:
    spec = importlib.util.spec_from_file_location("run_all", BENCH / "run_all.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, (script, *_args) in module.BENCHMARKS.items():
        assert (BENCH / script).is_file(), (name, script)


# The benchmarks `make bench` runs, at a size that takes seconds: a column the model renamed or a
# question that changed its arguments fails here, not in the next measurement.
SMOKE = {
    "bench_analytics.py": ["--runs", "300", "--repeat", "1"],
    "bench_detection.py": ["--copies", "2"],
}


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_a_benchmark_runs_small(script: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *SMOKE[script], "--db", str(tmp_path / "bench.duckdb")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=BENCH.parent,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ms" in done.stdout
