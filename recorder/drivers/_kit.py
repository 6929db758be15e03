"""What every driver shares: the command line, an OTLP/HTTP tracer provider aimed at the capture
endpoint, and the recording of each scenario (captured bodies + the observed ground truth).

A driver runs in its framework's venv::

    python recorder/drivers/openai_agents.py --model-url http://127.0.0.1:8765/v1 \
        --capture-url http://127.0.0.1:4399 --out tests/frameworks/recordings/openai_agents

and does, per scenario it supports::

    with rec.scenario(sc) as scen:
        for inv in scen.invocations():          # one per agent invocation (2 for a session)
            with inv:                           # catches and records what the framework raised
                run_agent(inv.task, inv.counters)
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import shutil
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from recorder.scenarios import AGENT_NAME, SCENARIOS, Counters, Loop, Scenario, task_text

COUNTERS = Counters()  # tools count their executions here (see Counters.run)
ARG_LOOPS = {"exact", "semantic", "oscillation"}  # kinds that can only be seen with the arguments


def parse_args(config: str) -> argparse.Namespace:
    """The driver's options; ``--config`` names the configuration (one driver can serve two)."""
    parser = argparse.ArgumentParser(description=f"record {config}")
    parser.add_argument("--config", default=config)
    parser.add_argument("--model-url", default="http://127.0.0.1:8765/v1")
    parser.add_argument("--capture-url", default="http://127.0.0.1:4399")
    parser.add_argument("--out", default=None, help="default tests/frameworks/recordings/<config>")
    parser.add_argument("--only", nargs="*", help="scenario names (default: all the driver supports)")
    args = parser.parse_args()
    args.out = args.out or str(Path(__file__).resolve().parents[2] / "tests/frameworks/recordings" / args.config)
    return args


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def _post(url: str, payload: Any) -> Any:
    request = urllib.request.Request(url, json.dumps(payload).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def otlp_provider(capture_url: str, service_name: str, batch: bool = True) -> Any:
    """A TracerProvider exporting OTLP/HTTP protobuf to the capture endpoint, set as global."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    exporter = OTLPSpanExporter(endpoint=f"{capture_url}/v1/traces")
    provider.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider


class Invocation:
    """One agent invocation: its tagged task, the tool counters, and what it raised."""

    def __init__(self, scenario: Scenario, key: str, index: int, session_id: str | None) -> None:
        self.scenario, self.key, self.index, self.session_id = scenario, key, index, session_id
        self.task = task_text(scenario, key)
        self.counters = COUNTERS  # the tools count into it; snapshot taken on exit
        self.observed: tuple[int, int, list[Any]] = (0, 0, [])
        self.raised: BaseException | None = None
        self.termination: str | None = None  # set by the driver where the framework's own limit stopped it
        self.result: Any = None

    def __enter__(self) -> Invocation:
        COUNTERS.__init__()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        self.observed = (COUNTERS.calls, COUNTERS.errors, list(COUNTERS.log))
        if exc is not None:
            self.raised = exc
            print(f"  {self.key}: raised {type(exc).__name__}: {str(exc)[:160]}", flush=True)
        return True


class ScenarioRecording:
    def __init__(self, rec: Recorder, scenario: Scenario) -> None:
        self.rec, self.scenario = rec, scenario
        self.done: list[Invocation] = []

    def invocations(self) -> Iterator[Invocation]:
        session = f"sess-{self.rec.config}-{self.scenario.name}" if self.scenario.runs > 1 else None
        for index in range(self.scenario.runs):
            inv = Invocation(self.scenario, f"{self.rec.config}.{index + 1}", index, session)
            yield inv
            self.done.append(inv)


class Recorder:
    """Records the scenarios of one framework configuration into ``out/<scenario>/``."""

    def __init__(
        self,
        config: str,
        args: argparse.Namespace,
        packages: list[str],
        flush: Callable[[], Any],
        arguments_captured: bool = True,
        limit_reason: str = "max_steps",
        limit_unexported: str | None = None,
        notes: str = "",
    ) -> None:
        """``limit_unexported``: why the spans carry no sign of the step limit, where they do not
        (an endless run then reads as an ``error``, and its fixture says so under ``as_read``)."""
        self.config, self.args, self.flush = config, args, flush
        self.arguments_captured, self.limit_reason, self.notes = arguments_captured, limit_reason, notes
        self.limit_unexported = limit_unexported
        self.versions = {p: metadata.version(p) for p in packages}
        self.model_root = args.model_url.rstrip("/")
        _post(f"{self.model_root}/reset", {"prefix": f"{config}."})

    def selected(self, supported: list[str]) -> list[Scenario]:
        names = [n for n in supported if not self.args.only or n in self.args.only]
        return [SCENARIOS[n] for n in names]

    def scenario(self, scenario: Scenario) -> _ScenarioContext:
        return _ScenarioContext(self, scenario)

    def _captured_total(self) -> int:
        return _get(f"{self.args.capture_url}/captured?since=1000000000")["total"]

    def save(self, recording: ScenarioRecording, mark: int) -> None:
        self.flush()
        last, stable_since = -1, time.monotonic()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:  # wait until the exporters have delivered everything
            total = self._captured_total()
            if total != last:
                last, stable_since = total, time.monotonic()
            elif time.monotonic() - stable_since > 1.0:
                break
            time.sleep(0.2)
        captured = _get(f"{self.args.capture_url}/captured?since={mark}")["requests"]
        out = Path(self.args.out) / recording.scenario.name
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        index, raw = [], b""
        for i, req in enumerate(captured):
            body = base64.b64decode(req["body"])
            raw += gzip.decompress(body) if req["content_encoding"] == "gzip" else body
            name = f"{i:03d}.{'json' if 'json' in req['content_type'] else 'pb'}"
            stored_gzip = req["content_encoding"] is None and len(body) > 6000
            if stored_gzip:
                body, name = gzip.compress(body, mtime=0), name + ".gz"
            (out / name).write_bytes(body)
            index.append(
                {
                    "file": name,
                    "path": req["path"],
                    "content_type": req["content_type"],
                    "content_encoding": req["content_encoding"],
                    "stored_gzip": stored_gzip,
                }
            )
        (out / "requests.json").write_text(json.dumps(index, indent=1) + "\n")
        expected = {
            "config": self.config,
            "scenario": recording.scenario.name,
            "versions": self.versions,
            "arguments_captured": self.arguments_captured,
            "notes": self.notes,
            "invocations": [self._truth(inv) for inv in recording.done],
        }
        for inv in expected["invocations"]:  # a session id the framework kept to itself is not expected
            if inv["session_id"] and inv["session_id"].encode() not in raw:
                if "session id" not in expected["notes"]:
                    expected["notes"] += f"; session id {inv['session_id']} is not in the exported spans"
                inv["session_id_exported"], inv["session_id"] = False, None
                inv["undetectable_loops"] += [lp for lp in inv["loops"] if lp["scope"] == "session"]
                inv["loops"] = [lp for lp in inv["loops"] if lp["scope"] != "session"]
        (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
        seen = [
            (i["steps"], i["tool_calls"], i["tool_errors"], i["termination_reason"]) for i in expected["invocations"]
        ]
        print(f"  {recording.scenario.name}: {len(captured)} requests, (steps, tools, errors, end) {seen}", flush=True)

    def _truth(self, inv: Invocation) -> dict[str, Any]:
        served = _get(f"{self.model_root}/log?key={inv.scenario.name}:{inv.key}")["requests"]
        sc = inv.scenario
        last = inv.index == sc.runs - 1
        loops: list[Loop] = list(sc.loops) + (list(sc.session_loops) if last else [])
        undetectable = [lp for lp in loops if not self.arguments_captured and lp.kind in ARG_LOOPS]
        if inv.termination:
            termination = inv.termination
        elif sc.endless:
            termination = self.limit_reason
        else:
            termination = "error" if inv.raised else "completed"
        as_read = {}
        if sc.endless and not inv.termination and self.limit_unexported:
            as_read = {"termination_reason": "error", "why": self.limit_unexported}
        return {
            **({"as_read": as_read} if as_read else {}),
            "key": inv.key,
            "agent": AGENT_NAME,
            "session_id": inv.session_id,
            "steps": len(served),
            "tool_calls": inv.observed[0],
            "tool_errors": inv.observed[1],
            "input_tokens": sum(r["usage"]["prompt_tokens"] for r in served if r["usage_returned"]),
            "output_tokens": sum(r["usage"]["completion_tokens"] for r in served if r["usage_returned"]),
            "cache_read_input_tokens": sum(
                r["usage"]["prompt_tokens_details"]["cached_tokens"] for r in served if r["usage_returned"]
            ),
            "raised": type(inv.raised).__name__ if inv.raised else None,
            "status": "error" if inv.raised else "ok",
            "termination_reason": termination,
            "loops": [vars(lp) for lp in loops if lp not in undetectable],
            "undetectable_loops": [vars(lp) for lp in undetectable],
            "also_true_loops": [vars(lp) for lp in sc.also_true],
            "tool_log": [{"tool": t, "args": a, "ok": ok} for t, a, ok in inv.observed[2]],
            "model_turns": [
                {
                    "turn": r["turn"],
                    "stream": r["stream"],
                    "usage_returned": r["usage_returned"],
                    "tool_calls": r["tool_calls"],
                    "usage": [r["usage"]["prompt_tokens"], r["usage"]["completion_tokens"]],
                }
                for r in served
            ],
        }


class _ScenarioContext:
    def __init__(self, rec: Recorder, scenario: Scenario) -> None:
        self.rec, self.recording = rec, ScenarioRecording(rec, scenario)

    def __enter__(self) -> ScenarioRecording:
        self.rec.flush()
        time.sleep(0.3)
        self.mark = self.rec._captured_total()
        print(f"[{self.rec.config}] {self.recording.scenario.name}", flush=True)
        return self.recording

    def __exit__(self, *exc: Any) -> None:
        self.rec.save(self.recording, self.mark)
