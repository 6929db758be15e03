"""Record every framework configuration: one venv per framework (from ``recorder/pins/``), the
scripted model server and the OTLP capture endpoint in this process, each driver run in its venv.

    python recorder/record.py                      # everything (make record-frameworks)
    python recorder/record.py strands adk          # some configurations
    python recorder/record.py --refresh langfuse   # install the newest releases, rewrite the pins
    RECORDER_VENVS=/work/fwvenvs python recorder/record.py --venvs /work/fwvenvs

Recordings land in ``tests/frameworks/recordings/<config>/<scenario>/``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from recorder import capture, model_server  # noqa: E402

HERE = ROOT / "recorder"
# config -> (venv / pins name, driver, extra environment)
CONFIGS: dict[str, tuple[str, str, dict[str, str]]] = {
    "openai_agents": ("openai_agents", "openai_agents.py", {}),
    "langgraph_openinference": ("langgraph", "langgraph_agent.py", {"LS_INSTRUMENTATION": "openinference"}),
    "langgraph_openllmetry": ("langgraph", "langgraph_agent.py", {"LS_INSTRUMENTATION": "openllmetry"}),
    "pydantic_ai": ("pydantic_ai", "pydantic_ai_agent.py", {}),
    "smolagents": ("smolagents", "smolagents_agent.py", {}),
    "strands": ("strands", "strands_agent.py", {}),
    "strands_latest": ("strands", "strands_agent.py", {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}),
    "langfuse": ("langfuse", "langfuse_react.py", {}),
    "crewai": ("crewai", "crewai_agent.py", {}),
    "llamaindex": ("llamaindex", "llamaindex_agent.py", {}),
    "adk": ("adk", "adk_agent.py", {}),
    "adk_content": ("adk", "adk_agent.py", {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}),
}


def ensure_venv(venvs: Path, name: str, refresh: bool) -> Path:
    """The venv for ``name``, installed from its pins (or, with ``refresh``, from its
    requirements, then frozen into the pins)."""
    venv, pins, reqs = venvs / name, HERE / "pins" / f"{name}.txt", HERE / "requirements" / f"{name}.in"
    python, stamp = venv / "bin" / "python", venv / ".recorder-installed"
    source = reqs if refresh or not pins.exists() else pins
    if python.exists() and stamp.exists() and not refresh and stamp.stat().st_mtime >= source.stat().st_mtime:
        return python
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    upgrade = ["--upgrade"] if refresh else []
    print(f"installing {name} from {source.relative_to(ROOT)}", flush=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *upgrade, "-r", str(source)], check=True)
    if source == reqs:
        frozen = subprocess.run([str(python), "-m", "pip", "freeze"], check=True, capture_output=True, text=True)
        pins.parent.mkdir(exist_ok=True)
        pins.write_text(frozen.stdout)
    stamp.touch()
    return python


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="*", help=f"default: all of {', '.join(CONFIGS)}")
    parser.add_argument("--venvs", default=os.environ.get("RECORDER_VENVS", str(ROOT / ".recorder-venvs")))
    parser.add_argument("--refresh", action="store_true", help="install the newest releases and rewrite the pins")
    parser.add_argument("--scenarios", nargs="*", help="only these scenarios")
    parser.add_argument("--out", default=str(ROOT / "tests" / "frameworks" / "recordings"))
    args = parser.parse_args()
    configs = args.configs or list(CONFIGS)
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown configuration(s): {unknown}")

    model, _ = model_server.serve()
    sink, _ = capture.serve()
    model_url = f"http://127.0.0.1:{model.server_address[1]}/v1"
    capture_url = f"http://127.0.0.1:{sink.server_address[1]}"
    failed = []
    for config in configs:
        venv_name, driver, extra = CONFIGS[config]
        python = ensure_venv(Path(args.venvs), venv_name, args.refresh)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LANGFUSE_", "LOOPSIGHT_"))}
        env.update(
            {
                "PYTHONPATH": str(ROOT),
                "OPENAI_API_KEY": "sk-recorder",
                "OPENAI_BASE_URL": model_url,
                "OPENAI_API_BASE": model_url,
                "RECORDER_CAPTURE_URL": capture_url,
                "CREWAI_DISABLE_TELEMETRY": "true",
                "CREWAI_DISABLE_TRACKING": "true",
                "CREWAI_TRACING_ENABLED": "false",
                "ANONYMIZED_TELEMETRY": "false",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "HF_HUB_OFFLINE": "1",
                "TOKENIZERS_PARALLELISM": "false",
                **extra,
            }
        )
        command = [
            str(python),
            str(HERE / "drivers" / driver),
            "--model-url",
            model_url,
            "--capture-url",
            capture_url,
            "--out",
            str(Path(args.out) / config),
            "--config",
            config,
        ]
        if args.scenarios:
            command += ["--only", *args.scenarios]
        started = time.monotonic()
        print(f"== {config} ({venv_name})", flush=True)
        done = subprocess.run(command, env=env, timeout=1200)
        print(f"== {config}: exit {done.returncode} in {time.monotonic() - started:.0f}s", flush=True)
        if done.returncode:
            failed.append(config)
    model.shutdown()
    sink.shutdown()
    if failed:
        print(f"failed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
