"""Replay the framework recordings into a running collector and compare what it says with the
ground truth each driver observed (``expected.json``), cell by cell.

    python recorder/matrix.py --collector http://127.0.0.1:4318            # replay all, print the table
    python recorder/matrix.py --collector URL --no-replay                   # the table for what is loaded
    python recorder/matrix.py --show tests/frameworks/recordings/strands/single   # the spans, as a tree

Times are shifted so that each scenario's newest span ends now (the collector keeps a retention
window and flags silent traces as stuck). Needs ``opentelemetry-proto`` and ``httpx``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

RECORDINGS = Path(__file__).resolve().parents[1] / "tests" / "frameworks" / "recordings"
CHECKED = [
    "agent",
    "steps",
    "tool_calls",
    "tool_errors",
    "input_tokens",
    "output_tokens",
    "status",
    "termination_reason",
]

CORE_SCENARIOS = ("single", "exact", "semantic", "repeated_error", "oscillation", "turn_limit")
"""The six scenarios of the issue's first measurement (the others were added with the recorder)."""

# --- recordings ------------------------------------------------------------------------------


def scenario_dirs(root: Path = RECORDINGS) -> list[Path]:
    """Every ``<config>/<scenario>`` directory holding an expected.json, sorted."""
    return sorted(p.parent for p in root.glob("*/*/expected.json"))


def load_requests(directory: Path) -> list[ExportTraceServiceRequest]:
    """The captured request bodies of one scenario, decoded, in the order they were sent."""
    requests = []
    for meta in json.loads((directory / "requests.json").read_text()):
        body = (directory / meta["file"]).read_bytes()
        if meta.get("stored_gzip") or meta.get("content_encoding") == "gzip":
            body = gzip.decompress(body)
        if "json" in meta["content_type"]:
            from google.protobuf import json_format

            request = json_format.Parse(body, ExportTraceServiceRequest(), ignore_unknown_fields=True)
        else:
            request = ExportTraceServiceRequest.FromString(body)
        requests.append(request)
    return requests


def iter_spans(requests: list[ExportTraceServiceRequest]) -> Iterator[tuple[Any, Any, Any]]:
    for request in requests:
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    yield resource_spans.resource, scope_spans.scope, span


def shift_to_now(requests: list[ExportTraceServiceRequest], now_ns: int | None = None) -> None:
    """Move every span and event time so the newest span ends ``now_ns`` (in place)."""
    spans = [span for _, _, span in iter_spans(requests)]
    if not spans:
        return
    delta = (now_ns or time.time_ns()) - max(s.end_time_unix_nano for s in spans)
    for span in spans:
        span.start_time_unix_nano += delta
        span.end_time_unix_nano += delta
        for event in span.events:
            event.time_unix_nano += delta


def trace_ids(requests: list[ExportTraceServiceRequest]) -> list[str]:
    """Trace ids (hex) in order of first appearance."""
    seen: dict[str, None] = {}
    for _, _, span in iter_spans(requests):
        seen.setdefault(span.trace_id.hex(), None)
    return list(seen)


def replay(url: str, directory: Path, headers: dict[str, str] | None = None) -> list[str]:
    """POST one scenario's requests (times shifted) to ``url``/v1/traces; its trace ids."""
    requests = load_requests(directory)
    shift_to_now(requests)
    for request in requests:
        response = httpx.post(
            f"{url}/v1/traces",
            content=request.SerializeToString(),
            timeout=30,
            headers={"Content-Type": "application/x-protobuf", **(headers or {})},
        )
        response.raise_for_status()
    return trace_ids(requests)


# --- comparison ------------------------------------------------------------------------------


@dataclass
class Cell:
    config: str
    scenario: str
    invocations: int
    runs_right: int = 0
    loops_expected: int = 0
    loops_found: int = 0
    false_loops: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches


def _loop_key(loop: dict[str, Any]) -> tuple[str, str]:
    return loop["kind"], ",".join(sorted(str(loop.get("tool") or "").split(",")))


def compare(expected: dict[str, Any], runs: list[dict[str, Any]], loops: list[dict[str, Any]]) -> Cell:
    """One cell: the scenario's runs (all runs of its traces, oldest first) and their loops
    against the invocations the driver observed."""
    invocations = expected["invocations"]
    cell = Cell(expected["config"], expected["scenario"], len(invocations))
    if len(runs) != len(invocations):
        cell.mismatches.append(f"runs {len(runs)} != {len(invocations)}")
    run_ids = {r["run_id"] for r in runs}
    loops = [lp for lp in loops if lp.get("run_id") in run_ids or lp.get("scope") == "session"]
    claimed: set[int] = set()
    for index, (want, run) in enumerate(zip(invocations, runs, strict=False)):
        prefix = f"run {index + 1}: " if len(invocations) > 1 else ""
        # Where the trace carries no sign of what the driver saw, the fixture says what can be read
        # instead and why; the cell holds loopsight to that reading and lists the gap.
        as_read = want.get("as_read", {})
        for name, value in as_read.items():
            if name != "why":
                cell.unreadable.append(f"{prefix}{name} {want[name]!r} reads as {value!r}: {as_read['why']}")
        want = {**want, **{k: v for k, v in as_read.items() if k != "why"}}
        wrong = [
            f"{prefix}{name} {run.get(name, 'missing')!r} != {want[name]!r}"
            for name in CHECKED
            if run.get(name) != want[name]
        ]
        if want.get("session_id") and run.get("session_id") != want["session_id"]:
            wrong.append(f"{prefix}session_id {run.get('session_id', 'missing')!r} != {want['session_id']!r}")
        if expected.get("arguments_captured") is False and run.get("arguments_captured") is not False:
            wrong.append(f"{prefix}arguments_captured {run.get('arguments_captured', 'missing')!r} != False")
        cell.runs_right += not wrong
        cell.mismatches += wrong
        tolerated = {_loop_key(lp) for lp in want["also_true_loops"] + want["undetectable_loops"]}
        for lp in want["loops"]:
            cell.loops_expected += 1
            scope_session = lp.get("scope") == "session"
            match = next(
                (
                    i
                    for i, got in enumerate(loops)
                    if i not in claimed
                    and _loop_key(got) == _loop_key(lp)
                    and (scope_session or got.get("run_id") == run["run_id"])
                    and (got.get("scope") in (None, "run") if not scope_session else True)
                ),
                None,
            )
            if match is None:
                cell.mismatches.append(f"{prefix}loop {lp['kind']} {lp['tool']} ({lp.get('scope', 'run')}) not found")
            else:
                claimed.add(match)
                cell.loops_found += 1
        for i, got in enumerate(loops):
            if i not in claimed and got.get("run_id") == run["run_id"] and _loop_key(got) in tolerated:
                claimed.add(i)
    for missing in invocations[len(runs) :]:
        cell.loops_expected += len(missing["loops"])
    for i, got in enumerate(loops):
        if i not in claimed:
            text = f"{got['kind']} {got.get('tool')} x{got.get('count')}"
            cell.false_loops.append(text)
            cell.mismatches.append(f"false loop {text}")
    return cell


def wait_settled(url: str, traces: list[str], headers: dict[str, str], timeout: float = 60.0) -> None:
    """Until the number of runs over ``traces`` stops changing (the collector derives runs after commit)."""
    last, stable, deadline = -1, 0, time.monotonic() + timeout
    while time.monotonic() < deadline and stable < 3:
        count = len(httpx.get(f"{url}/api/v1/runs", params={"limit": 1000}, headers=headers, timeout=30).json()["runs"])
        count += sum(len(fetch_trace(url, t, headers)[0]) for t in traces[-3:])
        stable, last = (stable + 1, last) if count == last else (0, count)
        time.sleep(0.5)


def fetch_trace(url: str, trace_id: str, headers: dict[str, str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    response = httpx.get(f"{url}/api/v1/runs/{trace_id}", headers=headers, timeout=30)
    if response.status_code == 404:
        return [], []
    response.raise_for_status()
    body = response.json()
    return body.get("runs", []), body.get("spans", [])


def run_matrix(
    url: str, dirs: list[Path] | None = None, do_replay: bool = True, headers: dict[str, str] | None = None
) -> list[Cell]:
    """Replay (optionally) and compare every scenario directory; one Cell each."""
    headers = headers or {}
    dirs = dirs if dirs is not None else scenario_dirs()
    traces_of = {d: (replay(url, d, headers) if do_replay else trace_ids(load_requests(d))) for d in dirs}
    wait_settled(url, [t for ts in traces_of.values() for t in ts], headers)
    listed = httpx.get(f"{url}/api/v1/runs", params={"limit": 1000}, headers=headers, timeout=30).json()["runs"]
    all_loops = httpx.get(f"{url}/api/v1/loops", headers=headers, timeout=30).json()["loops"]
    cells = []
    for d in dirs:
        expected = json.loads((d / "expected.json").read_text())
        traces = set(traces_of[d])
        runs = {r["run_id"]: r for t in traces for r in fetch_trace(url, t, headers)[0]}
        runs.update({r["run_id"]: r for r in listed if r["trace_id"] in traces})
        ordered = sorted(runs.values(), key=lambda r: (r.get("started_at") or "", r["run_id"]))
        cells.append(compare(expected, ordered, [lp for lp in all_loops if lp["trace_id"] in traces]))
    return cells


def table(cells: list[Cell]) -> str:
    """The matrix as Markdown: one row per framework × scenario, then the totals."""
    lines = ["| framework | scenario | result |", "|---|---|---|"]
    for c in cells:
        result = "ok" if c.ok else "; ".join(c.mismatches)
        if c.unreadable:
            result += " (not in the trace: " + "; ".join(c.unreadable) + ")"
        lines.append(f"| {c.config} | {c.scenario} | {result} |")
    runs_total = sum(c.invocations for c in cells)
    lines += [
        "",
        f"runs fully right: {sum(c.runs_right for c in cells)}/{runs_total} · "
        f"cells ok: {sum(c.ok for c in cells)}/{len(cells)} · "
        f"loops found: {sum(c.loops_found for c in cells)}/{sum(c.loops_expected for c in cells)} · "
        f"false loops: {sum(len(c.false_loops) for c in cells)}",
    ]
    core = [c for c in cells if c.scenario in CORE_SCENARIOS]
    if core:
        lines.append(
            f"core six scenarios: runs fully right {sum(c.runs_right for c in core)}/{sum(c.invocations for c in core)}"
            f" · loops found {sum(c.loops_found for c in core)}/{sum(c.loops_expected for c in core)}"
            f" · false loops {sum(len(c.false_loops) for c in core)}"
        )
    return "\n".join(lines)


# --- looking at a recording ------------------------------------------------------------------


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def show(directory: Path, width: int = 160) -> str:
    """The spans of a recording as an indented tree with their attributes and events."""
    spans = [(scope, span) for _, scope, span in iter_spans(load_requests(directory))]
    children: dict[bytes, list[Any]] = {}
    ids = {span.span_id for _, span in spans}
    for scope, span in sorted(spans, key=lambda p: p[1].start_time_unix_nano):
        children.setdefault(span.parent_span_id if span.parent_span_id in ids else b"", []).append((scope, span))
    out: list[str] = []

    def walk(parent: bytes, depth: int) -> None:
        for scope, span in children.get(parent, []):
            pad = "  " * depth
            status = {0: "", 1: " OK", 2: " ERROR"}[span.status.code] + (
                f" {span.status.message!r}" if span.status.message else ""
            )
            out.append(f"{pad}- {span.name!r} [{scope.name}] kind={span.kind} trace={span.trace_id.hex()[:8]}{status}")
            for kv in span.attributes:
                out.append(f"{pad}    {kv.key} = {json.dumps(_value(kv.value))[:width]}")
            for event in span.events:
                attrs = {kv.key: _value(kv.value) for kv in event.attributes}
                out.append(f"{pad}    event {event.name!r} {json.dumps(attrs)[:width]}")
            walk(span.span_id, depth + 1)

    walk(b"", 0)
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collector", default="http://127.0.0.1:4318")
    parser.add_argument("--token")
    parser.add_argument("--no-replay", action="store_true")
    parser.add_argument("--show", type=Path, help="print a recording's spans and exit")
    parser.add_argument("--width", type=int, default=160)
    parser.add_argument("--scenarios", nargs="*", help="only these scenarios (e.g. the six core ones)")
    parser.add_argument("only", nargs="*", help="configs or config/scenario to check (default: all)")
    args = parser.parse_args()
    if args.show:
        print(show(args.show, args.width))
        return 0
    dirs = [
        d
        for d in scenario_dirs()
        if (not args.only or d.parent.name in args.only or f"{d.parent.name}/{d.name}" in args.only)
        and (not args.scenarios or d.name in args.scenarios)
    ]
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    cells = run_matrix(args.collector, dirs, not args.no_replay, headers)
    print(table(cells))
    return 0 if all(c.ok for c in cells) else 1


if __name__ == "__main__":
    raise SystemExit(main())
