"""Pure shaping of API answers (lists of dicts) into the DataFrames the charts and tables take.

Example:
    >>> runs_frame([]).columns[:3].tolist()
    ['trace_id', 'started_at', 'agent']
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

import pandas as pd

from loopsight.dashboard import format as fmt

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
    "cost_usd",
    "unpriced_calls",
    "duration_ms",
    "session_id",
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


def child_counts(spans: list[dict[str, Any]]) -> dict[str, int]:
    """How many spans lie under each span (children, grandchildren, ...), by span id; leaves are absent.

    Example:
        >>> child_counts([{"span_id": "a"}, {"span_id": "b", "parent_span_id": "a"}, {"span_id": "c", "parent_span_id": "b"}])
        {'a': 2, 'b': 1}
    """
    by_id = {s["span_id"]: s for s in spans}
    counts: dict[str, int] = {}
    for span in spans:
        seen = {span["span_id"]}
        parent: str | None = span.get("parent_span_id")
        while parent is not None and parent in by_id and parent not in seen:  # a parent cycle stops the walk
            counts[parent] = counts.get(parent, 0) + 1
            seen.add(parent)
            parent = by_id[parent].get("parent_span_id")
    return counts


WATERFALL_COLUMNS = [
    "row",
    "span_id",
    "name",
    "kind",
    "paint",
    "start_ms",
    "end_ms",
    "draw_end_ms",
    "duration_ms",
    "duration",
    "label_at",
    "status",
    "tool",
    "step",
    "error_type",
    "error_class",
    "loop_kind",
    "input_tokens",
    "output_tokens",
    "children",
    "collapsed",
    "chosen",
    "tip_status",
    "tip_step",
    "tip_start",
    "tip_tool",
    "tip_error",
    "tip_tokens",
]
# The thinnest bar drawn, as a share of the run's length: a span under 1 ms still shows.
MIN_BAR_SHARE = 0.004
# A bar's duration is written after it, unless the bar ends past this share of the axis: then inside
# it when it is wide enough (WIDE_BAR_SHARE), else before it.
LATE_BAR_SHARE = 0.82
WIDE_BAR_SHARE = 0.15


def waterfall_frames(
    spans: list[dict[str, Any]],
    limit: int = MAX_WATERFALL_SPANS,
    collapsed: Iterable[str] = (),
    chosen: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Bars (one per span, offsets in ms from the trace start) and markers (error, retry, loop).

    Rows are labelled ``"NNN <· per depth><name>"`` so the y axis keeps tree order; charts strip
    the number when drawing. The spans under a span in ``collapsed`` are left out (its label
    ends with how many); ``chosen`` marks the selected span. ``paint`` is the span's kind, or
    ``failed`` for a span whose status is error; ``draw_end_ms`` keeps a span under 1 ms
    visible; ``duration`` and the ``tip_*`` columns are the texts shown (never null), ``label_at``
    where the duration is written (``after`` the bar, ``inside`` it, or ``before`` it).
    """
    folded = set(collapsed)
    counts = child_counts(spans)
    ordered: list[tuple[dict[str, Any], int]] = []
    hidden_below: int | None = None
    for span, depth in span_tree_order(spans):
        if hidden_below is not None and depth > hidden_below:
            continue
        hidden_below = depth if span["span_id"] in folded and counts.get(span["span_id"]) else None
        ordered.append((span, depth))
    ordered = ordered[:limit]
    marker_columns = ["row", "at_ms", "marker", "detail"]
    if not ordered:
        return pd.DataFrame(columns=WATERFALL_COLUMNS), pd.DataFrame(columns=marker_columns)
    starts = to_time([s.get("start") for s, _ in ordered])
    origin = starts.min()
    bars, markers = [], []
    for i, ((span, depth), start) in enumerate(zip(ordered, starts, strict=False)):
        name = str(span.get("name") or "")
        short = name if len(name) <= 60 else name[:59] + "…"
        children = counts.get(span["span_id"], 0)
        is_folded = span["span_id"] in folded and children > 0
        row = f"{i:03d} {'· ' * min(depth, 8)}{short}" + (f"  ▸ +{children}" if is_folded else "")
        start_ms = (start - origin).total_seconds() * 1000 if pd.notna(start) else 0.0
        duration = float(span.get("duration_ms") or 0.0)
        end_ms = start_ms + duration
        status = str(span.get("status") or "unset").lower()
        error = " / ".join(str(v) for v in (span.get("error_type"), span.get("error_class")) if v)
        tokens_in, tokens_out = span.get("input_tokens"), span.get("output_tokens")
        bars.append(
            {
                "row": row,
                "span_id": span.get("span_id"),
                "name": name,
                "kind": span.get("kind") or "other",
                "paint": "failed" if status == "error" else (span.get("kind") or "other"),
                "start_ms": start_ms,
                "end_ms": max(end_ms, start_ms + 0.001),
                "duration_ms": duration,
                "duration": fmt.duration(duration),
                "status": status,
                "tool": span.get("tool"),
                "step": span.get("step"),
                "error_type": span.get("error_type"),
                "error_class": span.get("error_class"),
                "loop_kind": _loop_kind(span),
                "input_tokens": tokens_in,
                "output_tokens": tokens_out,
                "children": children,
                "collapsed": is_folded,
                "chosen": span.get("span_id") == chosen,
                "tip_status": status,
                "tip_step": fmt.text(span.get("step")),
                "tip_start": f"+{fmt.duration(start_ms)}",
                "tip_tool": fmt.text(span.get("tool")),
                "tip_error": error or fmt.MISSING,
                "tip_tokens": fmt.MISSING
                if fmt.missing(tokens_in) and fmt.missing(tokens_out)
                else f"{fmt.tokens(tokens_in)} / {fmt.tokens(tokens_out)}",
            }
        )
        if status == "error":
            markers.append({"row": row, "at_ms": end_ms, "marker": "error", "detail": error or "error"})
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
    frame = pd.DataFrame(bars, columns=WATERFALL_COLUMNS)
    extent = max(float(frame["end_ms"].max()), 1e-3)
    frame["draw_end_ms"] = frame["end_ms"].clip(lower=frame["start_ms"] + extent * MIN_BAR_SHARE)
    late = frame["draw_end_ms"] > extent * LATE_BAR_SHARE
    wide = frame["draw_end_ms"] - frame["start_ms"] > extent * WIDE_BAR_SHARE
    frame["label_at"] = [
        "inside" if w else "before" if la else "after" for la, w in zip(late, late & wide, strict=False)
    ]
    return frame, pd.DataFrame(markers, columns=marker_columns)


def duration_text(ms: Any) -> str:
    """Milliseconds as people read them (:func:`loopsight.dashboard.format.duration`); missing -> ``'—'``.

    Example:
        >>> [duration_text(v) for v in (3.25, 412, 2410, 668101.671, 7_200_000, None)]
        ['3.2 ms', '412 ms', '2.41 s', '11.1 min', '2.0 h', '—']
    """
    return fmt.duration(ms)


def span_options(bars: pd.DataFrame) -> dict[str, str]:
    """A label per span id for the span picker: tree position and name, step, start offset
    (and the span id where those still repeat, as for parallel calls).

    Example:
        >>> span_options(pd.DataFrame({"span_id": ["a", "b"], "row": ["000 run", "001 · call"],
        ...                            "step": [None, 2], "start_ms": [0.0, 412.3]}))
        {'a': 'run · +0 ms', 'b': '· call · step 2 · +412 ms'}
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
    """One span as (field, value) rows, every value as text (missing as an em dash): attributes included, events listed."""
    rows: list[tuple[str, str]] = []
    for key, value in span.items():
        if key in ("attributes", "events"):
            continue
        rows.append((key, fmt.MISSING if fmt.missing(value) else str(value)))
    for key, value in sorted((span.get("attributes") or {}).items()):
        rows.append((f"attribute {key}", str(value)))
    for i, event in enumerate(span.get("events") or []):
        attrs = _event_field(event, "attributes") or {}
        text = ", ".join(f"{k}={v}" for k, v in sorted(attrs.items()))
        rows.append((f"event {i} {_event_field(event, 'name')}", f"{_event_field(event, 'time') or ''} {text}".strip()))
    return pd.DataFrame(rows, columns=["field", "value"])


# Captured content (LOOPSIGHT_CAPTURE_CONTENT=true, or another instrumentation's capture): shown
# as text blocks in the span detail, in this order.
CONTENT_ATTRIBUTES = (
    ("gen_ai.input.messages", "Input messages"),
    ("gen_ai.output.messages", "Output messages"),
    ("gen_ai.system_instructions", "System instructions"),
    ("gen_ai.tool.call.arguments", "Tool input"),
    ("gen_ai.tool.call.result", "Tool output"),
    ("input.value", "Input"),
    ("output.value", "Output"),
)


def span_content(span: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The captured content of a span: ``(title, attribute, text)`` per attribute present, JSON pretty-printed.

    Example:
        >>> [(title, key) for title, key, _ in span_content({"attributes": {"gen_ai.tool.call.arguments": "{}", "x": "1"}})]
        [('Tool input', 'gen_ai.tool.call.arguments')]
    """
    attributes = span.get("attributes") or {}
    found = []
    for key, title in CONTENT_ATTRIBUTES:
        value = attributes.get(key)
        if value is None or value == "":
            continue
        found.append((title, key, pretty(value)))
    return found


def pretty(value: Any) -> str:
    """A value as readable text: JSON (or a JSON string) indented, anything else as written."""
    parsed = value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
    if isinstance(parsed, (dict, list)):
        return json.dumps(parsed, indent=2, ensure_ascii=False)
    return str(value)


def as_text(frame: pd.DataFrame, times: Iterable[str] = ()) -> pd.DataFrame:
    """Every cell as the text to show (:func:`loopsight.dashboard.format.text`): ``times`` as
    ``YYYY-MM-DD HH:MM:SS`` (UTC), numbers with separators, missing values as an em dash.

    Example:
        >>> as_text(pd.DataFrame({"at": ["2026-01-01T12:00:00.5Z", None], "v": [0.13333, None], "n": [6000, 0]}),
        ...         times=["at"]).to_dict("records")
        [{'at': '2026-01-01 12:00:00', 'v': '0.1333', 'n': '6,000'}, {'at': '—', 'v': '—', 'n': '0'}]
    """
    shown = frame.copy()
    for column in shown.columns:
        if column in times:
            shown[column] = [fmt.timestamp(v, label=False) for v in shown[column]]
        else:
            shown[column] = [fmt.text(v) for v in shown[column]]
    return shown


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


def count_per_bucket(frame: pd.DataFrame, time: str, color: str, bucket_seconds: int) -> pd.DataFrame:
    """Rows counted per time bucket and ``color`` value: ``bucket``, ``bucket_end``, ``color``, ``count``.

    Example:
        >>> rows = pd.DataFrame({"at": pd.to_datetime(["2026-01-01 00:00:40", "2026-01-01 00:00:50"]), "kind": ["exact"] * 2})
        >>> count_per_bucket(rows, "at", "kind", 30)[["bucket", "kind", "count"]].to_dict("records")
        [{'bucket': Timestamp('2026-01-01 00:00:30'), 'kind': 'exact', 'count': 2}]
    """
    timed = frame.dropna(subset=[time]).assign(bucket=lambda f: f[time].dt.floor(f"{bucket_seconds}s"))
    counted = timed.groupby(["bucket", color], as_index=False).size().rename(columns={"size": "count"})
    return counted.assign(bucket_end=counted["bucket"] + pd.Timedelta(seconds=bucket_seconds))


def loops_per_bucket(buckets: Iterable[dict[str, Any]], bucket_seconds: int) -> pd.DataFrame:
    """``/api/v1/loops/over_time`` buckets as long form for a stacked chart: ``bucket``, ``kind``, ``count``,
    ``bucket_end``, one row per bucket and loop kind with loops (counted on the server).

    Example:
        >>> loops_per_bucket([{"bucket": "2026-01-01T00:00:00Z", "runs": 4, "exact": 2, "semantic": 0}], 60)[["kind", "count"]].to_dict("records")
        [{'kind': 'exact', 'count': 2}]
    """
    from loopsight.attributes import LOOP_KINDS

    rows = [
        {"bucket": b.get("bucket"), "kind": kind, "count": int(b.get(kind) or 0)}
        for b in buckets
        for kind in LOOP_KINDS
        if b.get(kind)
    ]
    frame = pd.DataFrame(rows, columns=["bucket", "kind", "count"])
    frame["bucket"] = to_time(frame["bucket"]).to_numpy() if len(frame) else pd.Series(dtype="datetime64[ns]")
    return frame.assign(bucket_end=frame["bucket"] + pd.Timedelta(seconds=bucket_seconds))


def runs_from_terminations(
    frame: pd.DataFrame,
    bucket_seconds: int,
    color: str = "status",
    status: str | None = None,
    reason: str | None = None,
) -> pd.DataFrame:
    """Runs per bucket from ``/api/v1/terminations`` rows (``bucket``, ``termination_reason``, ``runs``, ``ok``):
    ``bucket``, ``bucket_end``, ``color`` (``status`` ok/error, or ``termination_reason``), ``runs``; narrowed to
    ``status`` and ``reason`` when given. Counted on the server over the whole window.

    Example:
        >>> rows = pd.DataFrame({"bucket": pd.to_datetime(["2026-01-01"] * 2), "termination_reason": ["completed", "timeout"],
        ...                      "runs": [5, 2], "ok": [5, 0]})
        >>> runs_from_terminations(rows, 60)[["status", "runs"]].to_dict("records")
        [{'status': 'error', 'runs': 2}, {'status': 'ok', 'runs': 5}]
    """
    columns = ["bucket", color, "runs", "bucket_end"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    rows = frame if reason is None else frame[frame["termination_reason"] == reason]
    ok = rows["ok"].fillna(0) if "ok" in rows else (rows["termination_reason"] == "completed") * rows["runs"]
    split = pd.concat(
        [
            rows.assign(status="ok", runs=ok.astype("int64")),
            rows.assign(status="error", runs=(rows["runs"] - ok).astype("int64")),
        ]
    )
    if status is not None:
        split = split[split["status"] == status]
    split = split[split["runs"] > 0]
    counted = split.groupby(["bucket", color], as_index=False)["runs"].sum()
    return counted.assign(bucket_end=counted["bucket"] + pd.Timedelta(seconds=bucket_seconds))[columns]


def fitted_window(
    starts: pd.Series, ends: pd.Series, window: tuple[Any, Any], min_seconds: float = 60
) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The part of ``window`` (start or ``None``, end) the data covers: from its first bucket to its last
    (at least ``min_seconds`` wide, centred on the data), so a burst of runs is not one thin bar at the edge.

    Example:
        >>> fitted_window(pd.Series(pd.to_datetime(["2026-01-01 11:00"])), pd.Series(pd.to_datetime(["2026-01-01 11:30"])),
        ...               (pd.Timestamp("2026-01-01"), pd.Timestamp("2026-01-01 12:00")))
        (Timestamp('2026-01-01 11:00:00'), Timestamp('2026-01-01 11:30:00'))
    """
    low, high = pd.to_datetime(starts).min(), pd.to_datetime(ends).max()
    start, end = (fmt.to_utc(w) for w in window)
    if pd.isna(low) or pd.isna(high):
        return (start or pd.Timestamp(0)), (end or pd.Timestamp(0))
    if start is not None:
        low = max(low, start)
    if end is not None:
        high = min(high, end)
    short = min_seconds - (high - low).total_seconds()
    if short > 0:
        low, high = low - pd.Timedelta(seconds=short / 2), high + pd.Timedelta(seconds=short / 2)
        if end is not None and high > end:
            low, high = low - (high - end), end
    return low, high


def wilson_lower(failures: float, calls: float, z: float = 1.96) -> float:
    """The lower bound of the 95 % Wilson interval of a failure rate: low when there are few calls.

    Example:
        >>> round(wilson_lower(1, 1), 3), round(wilson_lower(132, 288), 3), wilson_lower(0, 0)
        (0.207, 0.402, 0.0)
    """
    if not calls:
        return 0.0
    p = failures / calls
    centre = p + z * z / (2 * calls)
    spread = z * math.sqrt(p * (1 - p) / calls + z * z / (4 * calls * calls))
    return max(0.0, (centre - spread) / (1 + z * z / calls))


MIN_CALLS_TO_RANK = 5


def rank_failing(tools: pd.DataFrame) -> pd.DataFrame:
    """Tools with failures, worst first by the Wilson lower bound of their fail rate (``fail_bound``):
    a tool failing 1 of 1 call ranks below one failing 132 of 288.

    Example:
        >>> tools = pd.DataFrame({"tool": ["once", "often"], "calls": [1, 288], "errors": [1, 132]})
        >>> rank_failing(tools)["tool"].tolist()
        ['often', 'once']
    """
    failing = tools[tools["errors"].fillna(0) > 0].copy()
    failing["fail_rate"] = failing["errors"] / failing["calls"].where(failing["calls"] > 0)
    failing["fail_bound"] = [wilson_lower(e, c) for e, c in zip(failing["errors"], failing["calls"], strict=False)]
    return failing.sort_values(["fail_bound", "errors"], ascending=False)


def step_signatures(spans: list[dict[str, Any]]) -> pd.DataFrame:
    """Per step of a run: its tool calls in order (``calls``: ``tool(args #hash)``, failures marked ✗),
    ``tool_calls``, ``errors`` and ``tokens`` (input + output of its model calls).

    Example:
        >>> spans = [{"kind": "llm", "step": 0, "start": "1", "input_tokens": 10, "output_tokens": 2},
        ...          {"kind": "tool", "step": 0, "start": "2", "tool": "search", "args_hash": "ab12cd34ef", "status": "ok"}]
        >>> step_signatures(spans).to_dict("records")
        [{'step': 0, 'calls': 'search(#ab12cd)', 'tool_calls': 1, 'errors': 0, 'tokens': 12}]
    """
    steps: dict[int, dict[str, Any]] = {}
    for span in sorted(spans, key=lambda s: str(s.get("start") or "")):
        if fmt.missing(span.get("step")) or span.get("kind") not in ("llm", "tool"):
            continue
        step = steps.setdefault(int(span["step"]), {"calls": [], "tool_calls": 0, "errors": 0, "tokens": 0})
        if span.get("kind") == "llm":
            step["tokens"] += int(span.get("input_tokens") or 0) + int(span.get("output_tokens") or 0)
            continue
        failed = str(span.get("status") or "").lower() == "error"
        args = f"#{str(span.get('args_hash'))[:6]}" if span.get("args_hash") else ""
        step["calls"].append(f"{span.get('tool') or span.get('name')}({args}){' ✗' if failed else ''}")
        step["tool_calls"] += 1
        step["errors"] += int(failed)
    rows = [{"step": n, **s, "calls": ", ".join(s["calls"]) or fmt.MISSING} for n, s in sorted(steps.items())]
    return pd.DataFrame(rows, columns=["step", "calls", "tool_calls", "errors", "tokens"])


def compare_steps(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, int | None]:
    """Two runs' :func:`step_signatures` side by side, and the first step where their tool calls differ
    (``None`` when they never do).

    Example:
        >>> a = pd.DataFrame({"step": [0, 1], "calls": ["s(#1)", "q(#2)"], "tool_calls": [1, 1], "errors": [0, 0], "tokens": [5, 9]})
        >>> b = pd.DataFrame({"step": [0, 1], "calls": ["s(#1)", "q(#3)"], "tool_calls": [1, 1], "errors": [0, 0], "tokens": [5, 7]})
        >>> compare_steps(a, b)[1]
        1
    """
    merged = a.merge(b, on="step", how="outer", suffixes=(" A", " B")).sort_values("step").reset_index(drop=True)
    for side in ("A", "B"):
        merged[f"calls {side}"] = merged[f"calls {side}"].fillna("(no step)")
        for column in ("tool_calls", "errors", "tokens"):
            merged[f"{column} {side}"] = merged[f"{column} {side}"].fillna(0).astype("int64")
    merged["same"] = merged["calls A"] == merged["calls B"]
    differing = merged.loc[~merged["same"], "step"]
    return merged, (int(differing.iloc[0]) if len(differing) else None)
