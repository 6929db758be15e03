"""Pure chart functions: a DataFrame in, an ``alt.Chart`` out (no Streamlit, no I/O).

Example:
    >>> import pandas as pd
    >>> chart = tokens_per_step(pd.DataFrame({"step": [0, 0], "direction": ["input", "output"], "tokens": [10, 3]}))
    >>> chart.to_dict()["mark"]["type"]
    'bar'
"""

from __future__ import annotations

from typing import Any, TypeAlias

import altair as alt
import pandas as pd

Chart: TypeAlias = alt.Chart | alt.LayerChart | alt.FacetChart
"""What the chart functions return: one chart, or layers of charts."""

KIND_COLORS = alt.Scale(
    domain=["agent", "llm", "tool", "other"],
    range=["#4c78a8", "#9467bd", "#2ca02c", "#a0a0a0"],
)
MARKER_SCALE = alt.Scale(domain=["error", "retry", "loop"], range=["#d62728", "#ff7f0e", "#e377c2"])
MARKER_SHAPES = alt.Scale(domain=["error", "retry", "loop"], range=["cross", "diamond", "triangle-down"])
STATUS_COLORS = alt.Scale(domain=["ok", "error"], range=["#2ca02c", "#d62728"])
ROW_HEIGHT = 22
# Streamlit fits the whole chart (axes, titles, legends) into the height given, so a chart
# with N rows needs its rows plus this much.
AXES_HEIGHT = 70


def waterfall(bars: pd.DataFrame, markers: pd.DataFrame) -> alt.LayerChart:
    """The run's spans as horizontal bars on a ms axis, in tree order, with event markers.

    ``bars``: row, name, kind, start_ms, end_ms, duration_ms, status, tool, step, error_type,
    tokens; ``markers``: row, at_ms, marker (error|retry|loop), detail.
    """
    y = alt.Y("row:N", sort=None, title=None, axis=alt.Axis(labelExpr="substring(datum.label, 4)", labelLimit=320))
    base = alt.Chart(bars).encode(y=y)
    spans = base.mark_bar(height=ROW_HEIGHT - 6, cornerRadius=2).encode(
        x=alt.X("start_ms:Q", title="ms since the run started"),
        x2="end_ms:Q",
        color=alt.Color("kind:N", scale=KIND_COLORS, title="span", legend=alt.Legend(orient="top")),
        stroke=alt.condition("datum.status == 'error'", alt.value("#d62728"), alt.value(None)),
        strokeWidth=alt.condition("datum.status == 'error'", alt.value(2), alt.value(0)),
        tooltip=[
            alt.Tooltip("name:N"),
            alt.Tooltip("kind:N"),
            alt.Tooltip("step:Q"),
            alt.Tooltip("start_ms:Q", format=",.1f", title="start (ms)"),
            alt.Tooltip("duration_ms:Q", format=",.1f", title="duration (ms)"),
            alt.Tooltip("status:N"),
            alt.Tooltip("tool:N"),
            alt.Tooltip("error_type:N"),
            alt.Tooltip("input_tokens:Q"),
            alt.Tooltip("output_tokens:Q"),
        ],
    )
    points = (
        alt.Chart(markers)
        .mark_point(size=90, filled=True, opacity=0.95)
        .encode(
            y=y,
            x=alt.X("at_ms:Q"),
            color=alt.Color("marker:N", scale=MARKER_SCALE, title="marker", legend=alt.Legend(orient="top")),
            shape=alt.Shape("marker:N", scale=MARKER_SHAPES, legend=None),
            tooltip=[
                alt.Tooltip("marker:N"),
                alt.Tooltip("detail:N"),
                alt.Tooltip("at_ms:Q", format=",.1f", title="at (ms)"),
            ],
        )
    )
    # A step per row, not a total height: Streamlit fits legends and axes into a total height,
    # which left a short run's rows too thin for their labels.
    return alt.layer(spans, points).resolve_scale(color="independent").properties(height=alt.Step(ROW_HEIGHT))


def tokens_per_step(frame: pd.DataFrame) -> Chart:
    """Stacked input/output tokens per step (``step``, ``direction``, ``tokens``)."""
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("step:O", title="step"),
            y=alt.Y("tokens:Q", title="tokens", stack=True),
            color=alt.Color("direction:N", scale=alt.Scale(domain=["input", "output"], range=["#9467bd", "#c5b0d5"])),
            tooltip=["step:O", "direction:N", alt.Tooltip("tokens:Q", format=",")],
        )
        .properties(height=220)
    )


def runs_over_time(frame: pd.DataFrame, window: tuple[Any, Any], color: str = "status") -> Chart:
    """Runs per time bucket stacked by ``color`` (:func:`frames.runs_per_bucket`), over the time ``window``."""
    scale = STATUS_COLORS if color == "status" else alt.Scale(scheme="tableau10")
    return _stacked_over_time(frame, color, scale, "bucket", "runs", "bucket_end", window).properties(height=180)


def terminations_over_time(
    frame: pd.DataFrame,
    time: str = "bucket",
    value: str = "runs",
    end: str | None = None,
    window: tuple[Any, Any] | None = None,
) -> Chart:
    """Stacked bars of runs by termination reason per bucket (``time``, ``termination_reason``,
    ``value``; ``end`` = bucket end, to draw each bar as wide as its bucket; ``window`` fixes
    the time axis to the filtered range)."""
    return _stacked_over_time(
        frame, "termination_reason", alt.Scale(scheme="tableau10"), time, value, end, window, legend="termination"
    ).properties(height=240)


def _stacked_over_time(
    frame: pd.DataFrame,
    color: str,
    scale: alt.Scale,
    time: str,
    value: str,
    end: str | None,
    window: tuple[Any, Any] | None,
    legend: str | None = None,
) -> Chart:
    """Bars of ``sum(value)`` per time bucket, stacked by ``color``, counted in whole runs."""
    domain = alt.Scale(domain=[pd.Timestamp(w).isoformat() for w in window]) if window else alt.Undefined
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X(f"{time}:T", title=None, scale=domain),
            **({"x2": alt.X2(f"{end}:T")} if end else {}),
            y=alt.Y(f"sum({value}):Q", title="runs", stack=True, axis=alt.Axis(tickMinStep=1, format="d")),
            color=alt.Color(f"{color}:N", title=legend or color.replace("_", " "), scale=scale),
            tooltip=[alt.Tooltip(f"{time}:T"), f"{color}:N", alt.Tooltip(f"sum({value}):Q", title=value)],
        )
    )


def bar_by(
    frame: pd.DataFrame,
    category: str,
    value: str,
    *,
    color: str | None = None,
    title: str | None = None,
    value_format: str = ",",
) -> Chart:
    """Horizontal bars of ``value`` per ``category`` (largest first), optionally stacked by ``color``."""
    encoding: dict[str, Any] = {
        "y": alt.Y(f"{category}:N", sort="-x", title=None, axis=alt.Axis(labelLimit=240)),
        "x": alt.X(f"sum({value}):Q", title=title or value.replace("_", " ")),
        "tooltip": [
            alt.Tooltip(f"{category}:N"),
            alt.Tooltip(f"sum({value}):Q", format=value_format, title=title or value),
        ],
    }
    if color:
        encoding["color"] = alt.Color(f"{color}:N", title=color.replace("_", " "), scale=alt.Scale(scheme="tableau10"))
        encoding["tooltip"].insert(1, alt.Tooltip(f"{color}:N"))
    rows = frame[category].nunique() if category in frame else 1
    return alt.Chart(frame).mark_bar().encode(**encoding).properties(height=max(140, 28 * rows + AXES_HEIGHT))


def latency(frame: pd.DataFrame) -> Chart:
    """p50 bar and p95 tick per tool (``tool``, ``p50_ms``, ``p95_ms``)."""
    y = alt.Y(
        "tool:N", sort=alt.EncodingSortField("p95_ms", order="descending"), title=None, axis=alt.Axis(labelLimit=240)
    )
    p50 = (
        alt.Chart(frame)
        .mark_bar(color="#2ca02c", opacity=0.7)
        .encode(
            y=y,
            x=alt.X("p50_ms:Q", title="latency (ms): bar p50, tick p95"),
            tooltip=["tool:N", alt.Tooltip("p50_ms:Q", format=",.1f"), alt.Tooltip("p95_ms:Q", format=",.1f")],
        )
    )
    p95 = alt.Chart(frame).mark_tick(color="#d62728", thickness=3, size=18).encode(y=y, x="p95_ms:Q")
    return alt.layer(p50, p95).properties(height=max(140, 28 * frame["tool"].nunique() + AXES_HEIGHT))


def burn_curve(frame: pd.DataFrame) -> Chart:
    """Input tokens per step, one line per agent (``agent``, ``step``, ``input_tokens``)."""
    return (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title="step"),
            y=alt.Y("input_tokens:Q", title="input tokens per step"),
            color=alt.Color("agent:N", title="agent", scale=alt.Scale(scheme="tableau10")),
            tooltip=["agent:N", "step:Q", alt.Tooltip("input_tokens:Q", format=",.0f")],
        )
        .properties(height=280)
    )


def events_over_time(frame: pd.DataFrame, time: str, color: str, title: str = "count") -> Chart:
    """Counts of rows per time bucket (auto-binned) stacked by ``color``."""
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X(f"yearmonthdatehoursminutes({time}):T", title=None),
            y=alt.Y("count():Q", title=title),
            color=alt.Color(f"{color}:N", title=color.replace("_", " "), scale=alt.Scale(scheme="tableau10")),
            tooltip=[alt.Tooltip(f"{color}:N"), alt.Tooltip("count():Q", title=title)],
        )
        .properties(height=200)
    )


def metric_with_threshold(
    frame: pd.DataFrame, threshold: float | None, time: str = "at", value: str = "value"
) -> Chart:
    """A rule's metric over time as a line with its threshold as a dashed rule."""
    line = (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X(f"{time}:T", title=None),
            y=alt.Y(f"{value}:Q", title="value"),
            tooltip=[alt.Tooltip(f"{time}:T"), alt.Tooltip(f"{value}:Q", format=",.3f")],
        )
    )
    if threshold is None:
        return line.properties(height=160)
    rule = (
        alt.Chart(pd.DataFrame({"threshold": [threshold]}))
        .mark_rule(color="#d62728", strokeDash=[6, 4])
        .encode(y="threshold:Q")
    )
    return alt.layer(line, rule).properties(height=160)
