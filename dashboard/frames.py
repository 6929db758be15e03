"""Pure shaping of API answers (lists of dicts) into the DataFrames the charts and tables take.

Example:
    >>> runs_frame([]).columns[:3].tolist()
    ['trace_id', 'started_at', 'agent']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

RUN_COLUMNS = [
    "trace_id",
    "started_at",
    "agent",
    "service",
    "status",
    "termination_reason",
    "steps",
    "llm_calls",
    "tool_calls",
    "tool_errors",
    "retries",
    "loops",
    "input_tokens",
    "output_tokens",
    "tokens",
    "duration_ms",
    "run_id",
]
MAX_WATERFALL_SPANS = 400


def to_time(values: Any) -> pd.Series:
    """ISO-8601 strings (``...Z``) to naive-UTC pandas timestamps; bad values become NaT."""
    parsed = pd.to_datetime(pd.Series(values, dtype="object"), utc=True, errors="coerce", format="ISO8601")
    return parsed.dt.tz_localize(None)


def runs_frame(runs: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Runs as a table: one row per run, ``tokens`` = input + output, times parsed."""
    frame = pd.DataFrame(list(runs))
    for column in RUN_COLUMNS:
        if column not in frame:
            frame[column] = pd.Series(dtype="object")
    frame["tokens"] = frame["input_tokens"].fillna(0).astype("int64") + frame["output_tokens"].fillna(0).astype("int64")
    frame["started_at"] = to_time(frame["started_at"])
    return frame[RUN_COLUMNS + [c for c in frame.columns if c not in RUN_COLUMNS]]


def runs_per_bucket(frame: pd.DataFrame, bucket_seconds: int, color: str = "status") -> pd.DataFrame:
    """Runs counted per time bucket and ``color`` value: ``bucket``, ``bucket_end``, ``color``, ``runs``.

    Example:
        >>> runs = runs_frame([{"trace_id": "a", "started_at": "2026-01-01T00:00:40Z", "status": "ok"},
        ...                    {"trace_id": "b", "started_at": "2026-01-01T00:00:50Z", "status": "ok"}])
        >>> runs_per_bucket(runs, 30).to_dict("records")  # doctest: +NORMALIZE_WHITESPACE
        [{'bucket': Timestamp('2026-01-01 00:00:30'), 'status': 'ok', 'runs': 2,
          'bucket_end': Timestamp('2026-01-01 00:01:00')}]
    """
    timed = frame.dropna(subset=["started_at"]).assign(bucket=lambda f: f["started_at"].dt.floor(f"{bucket_seconds}s"))
    counted = timed.groupby(["bucket", color], as_index=False).size().rename(columns={"size": "runs"})
    return counted.assign(bucket_end=counted["bucket"] + pd.Timedelta(seconds=bucket_seconds))


def span_tree_order(spans: list[dict[str, Any]]) -> list[tuple[dict[str, Any], int]]:
    """Spans depth-first (children by start time under their parent), each with its depth.

    Example:
        >>> spans = [{"span_id": "b", "parent_span_id": "a", "start": "2"}, {"span_id": "a", "parent_span_id": "", "start": "1"}]
        >>> [(s["span_id"], d) for s, d in span_tree_order(spans)]
        [('a', 0), ('b', 1)]
    """
    by_id = {s["span_id"]: s for s in spans}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for span in spans:
        parent = span.get("parent_span_id") or None
        children.setdefault(parent if parent in by_id else None, []).append(span)
    for group in children.values():
        group.sort(key=lambda s: (str(s.get("start") or ""), s["span_id"]))
    ordered: list[tuple[dict[str, Any], int]] = []
    seen: set[str] = set()
    stack = [(s, 0) for s in reversed(children.get(None, []))]
    while stack:
        span, depth = stack.pop()
        if span["span_id"] in seen:
            continue
        seen.add(span["span_id"])
        ordered.append((span, depth))
        stack.extend((c, depth + 1) for c in reversed(children.get(span["span_id"], [])))
    ordered.extend((s, 0) for s in spans if s["span_id"] not in seen)  # parent cycles
    return ordered


def waterfall_frames(
    spans: list[dict[str, Any]], limit: int = MAX_WATERFALL_SPANS
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Bars (one per span, offsets in ms from the trace start) and markers (error, retry, loop).

    Rows are labelled ``"NNN <· per depth><name>"`` so the y axis keeps tree order; charts strip
    the number when drawing.
    """
    ordered = span_tree_order(spans)[:limit]
    bar_columns = [
        "row",
        "span_id",
        "name",
        "kind",
        "start_ms",
        "end_ms",
        "duration_ms",
        "status",
        "tool",
        "step",
        "error_type",
        "error_class",
        "loop_kind",
        "input_tokens",
        "output_tokens",
    ]
    marker_columns = ["row", "at_ms", "marker", "detail"]
    if not ordered:
        return pd.DataFrame(columns=bar_columns), pd.DataFrame(columns=marker_columns)
    starts = to_time([s.get("start") for s, _ in ordered])
    origin = starts.min()
    bars, markers = [], []
    for i, ((span, depth), start) in enumerate(zip(ordered, starts, strict=False)):
        name = str(span.get("name") or "")
        short = name if len(name) <= 60 else name[:59] + "…"
        row = f"{i:03d} {'· ' * min(depth, 8)}{short}"
        start_ms = (start - origin).total_seconds() * 1000 if pd.notna(start) else 0.0
        duration = float(span.get("duration_ms") or 0.0)
        end_ms = start_ms + duration
        bars.append(
            {
                "row": row,
                "span_id": span.get("span_id"),
                "name": name,
                "kind": span.get("kind") or "other",
                "start_ms": start_ms,
                "end_ms": max(end_ms, start_ms + 0.001),
                "duration_ms": duration,
                "status": str(span.get("status") or "unset").lower(),
                "tool": span.get("tool"),
                "step": span.get("step"),
                "error_type": span.get("error_type"),
                "error_class": span.get("error_class"),
                "loop_kind": _loop_kind(span),
                "input_tokens": span.get("input_tokens"),
                "output_tokens": span.get("output_tokens"),
            }
        )
        if str(span.get("status") or "").lower() == "error":
            detail = " / ".join(str(v) for v in (span.get("error_type"), span.get("error_class")) if v)
            markers.append({"row": row, "at_ms": end_ms, "marker": "error", "detail": detail or "error"})
        if _loop_kind(span):
            markers.append({"row": row, "at_ms": start_ms, "marker": "loop", "detail": f"loop: {_loop_kind(span)}"})
        for event in span.get("events") or []:
            event_name = str(_event_field(event, "name") or "")
            if event_name not in ("retry", "loop_detected"):
                continue
            at = to_time([_event_field(event, "time")]).iloc[0]
            at_ms = (at - origin).total_seconds() * 1000 if pd.notna(at) else start_ms
            attrs = _event_field(event, "attributes") or {}
            if event_name == "retry":
                detail = " / ".join(
                    str(attrs[k])
                    for k in ("error.type", "loopsight.error.class", "loopsight.backoff_ms")
                    if attrs.get(k)
                )
                markers.append({"row": row, "at_ms": at_ms, "marker": "retry", "detail": f"retry {detail}".strip()})
            else:
                markers.append(
                    {
                        "row": row,
                        "at_ms": at_ms,
                        "marker": "loop",
                        "detail": f"loop guard: {attrs.get('loopsight.loop.kind', '')}",
                    }
                )
    return pd.DataFrame(bars, columns=bar_columns), pd.DataFrame(markers, columns=marker_columns)


def duration_text(ms: Any) -> str:
    """Milliseconds as people read them; missing -> ``''``.

    Example:
        >>> [duration_text(v) for v in (3.25, 412, 2410, 668101.671, 7_200_000, None)]
        ['3.2 ms', '412 ms', '2.41 s', '11.1 min', '2.0 h', '']
    """
    if ms is None or pd.isna(ms):
        return ""
    ms = float(ms)
    if abs(ms) < 10:
        return f"{ms:.1f} ms"
    if abs(ms) < 1000:
        return f"{ms:.0f} ms"
    if abs(ms) < 60_000:
        return f"{ms / 1000:.2f} s"
    if abs(ms) < 3_600_000:
        return f"{ms / 60_000:.1f} min"
    return f"{ms / 3_600_000:,.1f} h"


def span_options(bars: pd.DataFrame) -> dict[str, str]:
    """A label per span id for the span picker: tree position and name, step, start offset
    (and the span id where those still repeat, as for parallel calls).

    Example:
        >>> span_options(pd.DataFrame({"span_id": ["a", "b"], "row": ["000 run", "001 · call"],
        ...                            "step": [None, 2], "start_ms": [0.0, 412.3]}))
        {'a': 'run · +0.0 ms', 'b': '· call · step 2 · +412 ms'}
    """
    labels = {}
    for bar in bars.itertuples():
        step = f" · step {int(bar.step)}" if pd.notna(bar.step) else ""
        labels[bar.span_id] = f"{bar.row[4:].strip()}{step} · +{duration_text(bar.start_ms)}"
    repeated = pd.Series(labels).duplicated(keep=False)
    return {sid: f"{label} · {sid}" if repeated[sid] else label for sid, label in labels.items()}


def default_span(bars: pd.DataFrame) -> int:
    """Position of the span the detail panel opens on: the first flagged (error or loop) span that
    is not the run itself, else the first flagged, else the first.

    Example:
        >>> default_span(pd.DataFrame({"kind": ["agent", "llm", "tool"], "status": ["error", "unset", "unset"],
        ...                            "loop_kind": [None, None, "exact"]}))
        2
    """
    if bars.empty:
        return 0
    # Missing loop kinds are NaN (truthy) in a string column: compare values, never truthiness.
    flagged = (bars["status"] == "error") | (bars["loop_kind"].fillna("").astype(str) != "")
    for candidates in (flagged & (bars["kind"] != "agent"), flagged):
        if candidates.any():
            return int(candidates.to_numpy().argmax())
    return 0


_EVENT_KEYS = {
    "name": ("name", "Name"),
    "time": ("time", "Timestamp", "timestamp"),
    "attributes": ("attributes", "Attributes"),
}


def _event_field(event: dict[str, Any], field: str) -> Any:
    """An event's field under the API's name (``time``) or the store's (``Timestamp``)."""
    return next((event[k] for k in _EVENT_KEYS[field] if event.get(k) is not None), None)


def _loop_kind(span: dict[str, Any]) -> str | None:
    """Where the loop guard fired on this span: the typed column or the raw attribute."""
    return span.get("loop_kind") or (span.get("attributes") or {}).get("loopsight.loop.kind")


def tokens_per_step(spans: list[dict[str, Any]]) -> pd.DataFrame:
    """Long format (step, direction, tokens) summed over the run's model calls.

    Example:
        >>> tokens_per_step([{"kind": "llm", "step": 0, "input_tokens": 5, "output_tokens": 2}]).to_dict("records")
        [{'step': 0, 'direction': 'input', 'tokens': 5}, {'step': 0, 'direction': 'output', 'tokens': 2}]
    """
    rows = [s for s in spans if s.get("kind") == "llm"]
    if not rows:
        return pd.DataFrame(columns=["step", "direction", "tokens"])
    frame = pd.DataFrame(rows)
    if "step" not in frame or frame["step"].isna().all():
        frame["step"] = range(len(frame))
    frame["step"] = frame["step"].fillna(-1).astype("int64")
    for column in ("input_tokens", "output_tokens"):
        frame[column] = frame.get(column, pd.Series(0, index=frame.index)).fillna(0).astype("int64")
    summed = frame.groupby("step", as_index=False)[["input_tokens", "output_tokens"]].sum()
    long = summed.melt(id_vars="step", var_name="direction", value_name="tokens")
    long["direction"] = long["direction"].str.removesuffix("_tokens")
    return long.sort_values(["step", "direction"]).reset_index(drop=True)


def span_detail(span: dict[str, Any]) -> pd.DataFrame:
    """One span as (field, value) rows, every value as text: attributes included, events listed."""
    rows: list[tuple[str, str]] = []
    for key, value in span.items():
        if key in ("attributes", "events"):
            continue
        rows.append((key, "" if value is None else str(value)))
    for key, value in sorted((span.get("attributes") or {}).items()):
        rows.append((f"attribute {key}", str(value)))
    for i, event in enumerate(span.get("events") or []):
        attrs = _event_field(event, "attributes") or {}
        text = ", ".join(f"{k}={v}" for k, v in sorted(attrs.items()))
        rows.append((f"event {i} {_event_field(event, 'name')}", f"{_event_field(event, 'time') or ''} {text}".strip()))
    return pd.DataFrame(rows, columns=["field", "value"])


def as_text(frame: pd.DataFrame, times: Iterable[str] = ()) -> pd.DataFrame:
    """Every cell as the text to show: ``times`` as ``YYYY-MM-DD HH:MM:SS`` (UTC), numbers to 4
    significant digits, and missing values blank (a table shows a null as "None").

    Example:
        >>> as_text(pd.DataFrame({"at": ["2026-01-01T12:00:00.5Z", None], "v": [0.13333, None], "n": [60, 0]}),
        ...         times=["at"]).to_dict("records")
        [{'at': '2026-01-01 12:00:00', 'v': '0.1333', 'n': '60'}, {'at': '', 'v': '', 'n': '0'}]
    """
    shown = frame.copy()
    for column in shown.columns:
        if column in times:
            shown[column] = to_time(shown[column]).dt.strftime("%Y-%m-%d %H:%M:%S")
        shown[column] = [_text(v) for v in shown[column]]
    return shown


def _text(value: Any) -> str:
    if isinstance(value, (list, dict)):
        return str(value)
    if value is None or pd.isna(value):
        return ""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.4g}"
    return str(int(value)) if isinstance(value, float) else str(value)


def records(answer: Any, *keys: str) -> list[dict[str, Any]]:
    """The list of records in an answer that is a list, or a dict holding one under ``keys``.

    Example:
        >>> records({"buckets": [{"a": 1}]}, "series", "buckets")
        [{'a': 1}]
    """
    if isinstance(answer, list):
        return answer
    if isinstance(answer, dict):
        for key in keys:
            if isinstance(answer.get(key), list):
                return answer[key]
        lists = [v for v in answer.values() if isinstance(v, list)]
        if len(lists) == 1:
            return lists[0]
    return []


def first_column(frame: pd.DataFrame, *names: str) -> str | None:
    """The first of ``names`` that is a column of ``frame``."""
    return next((n for n in names if n in frame.columns), None)
