"""Pure chart functions: a DataFrame in, an ``alt.Chart`` out (no Streamlit, no I/O).

Colours come from :mod:`loopsight.dashboard.colors` (one fixed scale per meaning), numbers
and times from :mod:`loopsight.dashboard.format`'s rules; time axes are UTC on a 24 h clock
and fit the span of time they are given; counts and steps get whole ticks only.

Example:
    >>> import pandas as pd
    >>> chart = tokens_per_step(pd.DataFrame({"step": [0, 0], "direction": ["input", "output"], "tokens": [10, 3]}))
    >>> chart.to_dict()["mark"]["type"]
    'bar'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import altair as alt
import pandas as pd

from loopsight.dashboard import colors
from loopsight.dashboard import format as fmt

Chart: TypeAlias = alt.Chart | alt.LayerChart | alt.FacetChart
"""What the chart functions return: one chart, or layers of charts."""

ROW_HEIGHT = 22
# Streamlit fits the whole chart (axes, titles, legends) into the height given, so a chart
# with N rows needs its rows plus this much.
AXES_HEIGHT = 70
SELECTED_STROKE = "#f5b700"
SPAN_SELECTION = "span"
TIME_TITLE = "time (UTC)"
# Text beside a bar: a grey that reads on the light and the dark theme alike.
LABEL_GREY = "#8c8c8c"


def _iso(value: Any) -> str:
    """A time as ISO-8601 with ``Z``: the browser reads it as UTC (a bare ISO string would be local time)."""
    stamp = fmt.to_utc(value)
    return "" if stamp is None else stamp.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def time_format(span_seconds: float) -> str:
    """The d3 time format of a time axis over ``span_seconds``: seconds shown up to 10 minutes (its
    ~8 ticks are then less than a minute apart: "07:54 07:54 07:55" otherwise), the date over a day.

    Example:
        >>> [time_format(s) for s in (60, 300, 3600, 3 * 86400, 60 * 86400)]
        ['%H:%M:%S', '%H:%M:%S', '%H:%M', '%m-%d %H:%M', '%Y-%m-%d']
    """
    if span_seconds <= 600:
        return "%H:%M:%S"
    if span_seconds <= 86400:
        return "%H:%M"
    if span_seconds <= 14 * 86400:
        return "%m-%d %H:%M"
    return "%Y-%m-%d"


def time_x(field: str, domain: tuple[Any, Any] | None, title: str = TIME_TITLE) -> alt.X:
    """A UTC time axis over ``domain`` (start, end), labelled on a 24 h clock."""
    if domain is None:
        return alt.X(f"{field}:T", title=title, scale=alt.Scale(type="utc"), axis=alt.Axis(format="%H:%M"))
    start, end = (fmt.to_utc(d) for d in domain)
    span = (end - start).total_seconds() if start is not None and end is not None else 86400
    return alt.X(
        f"{field}:T",
        title=title,
        scale=alt.Scale(type="utc", domain=[_iso(start), _iso(end)]),
        axis=alt.Axis(format=time_format(span), labelAngle=0, labelOverlap=True, tickCount=8),
    )


def count_y(field: str, title: str, stack: bool = True) -> alt.Y:
    """A count axis: whole ticks with separators, never 0.5."""
    return alt.Y(field, title=title, stack=stack or None, axis=alt.Axis(tickMinStep=1, format=fmt.AXIS_COUNT))


def _present(frame: pd.DataFrame, column: str) -> list[str]:
    return sorted({str(v) for v in frame[column].dropna()}) if column in frame else []


def _ms_axis(extent_ms: float) -> tuple[str, str]:
    """The unit of a waterfall's axis over ``extent_ms`` and the Vega expression printing a tick in it."""
    for unit, size, limit in (("h", 3_600_000, 4 * 3_600_000), ("min", 60_000, 10 * 60_000), ("s", 1000, 10_000)):
        if extent_ms >= limit:
            return unit, f"format(datum.value / {size}, ',~r') + ' {unit}'"
    return "ms", "format(datum.value, ',~r') + ' ms'"


def waterfall(bars: pd.DataFrame, markers: pd.DataFrame) -> alt.LayerChart:
    """The run's spans as horizontal bars in tree order, with event markers and each bar's duration.

    ``bars`` (:func:`frames.waterfall_frames`): row, span_id, kind, paint (the kind, or
    ``failed``), start_ms, draw_end_ms, duration, label_at, chosen and the ``tip_*``
    tooltip texts; ``markers``: row, at_ms, marker (error|retry|loop), detail. A click on a
    bar selects its span (the selection ``span``, by ``span_id``).
    """
    extent = float(bars["draw_end_ms"].max()) if len(bars) else 1.0
    unit, label = _ms_axis(extent)
    x_scale = alt.Scale(domain=[0, max(extent, 1e-3)], nice=False)
    y = alt.Y("row:N", sort=None, title=None, axis=alt.Axis(labelExpr="substring(datum.label, 4)", labelLimit=320))
    pick = alt.selection_point(name=SPAN_SELECTION, fields=["span_id"], on="click", clear=False)
    # The chosen span's outline as data (no conditional encodings: Altair validates each one it builds).
    drawn = bars.assign(
        outline=[SELECTED_STROKE if c else "transparent" for c in bars["chosen"]],
        outline_width=[3 if c else 0 for c in bars["chosen"]],
    )
    spans = (
        alt.Chart(drawn)
        .mark_bar(height=ROW_HEIGHT - 6, cornerRadius=2, cursor="pointer")
        .add_params(pick)
        .encode(
            y=y,
            x=alt.X(
                "start_ms:Q",
                title=f"time since the run started ({unit})",
                scale=x_scale,
                axis=alt.Axis(labelExpr=label),
            ),
            x2=alt.X2("draw_end_ms:Q"),
            color=alt.Color(
                "paint:N",
                scale=colors.scale("span_kind"),
                legend=colors.legend("span", _present(bars, "paint"), orient="top"),
            ),
            stroke=alt.Stroke("outline:N", scale=None),
            strokeWidth=alt.StrokeWidth("outline_width:Q", scale=None),
            tooltip=[
                alt.Tooltip("name:N", title="span"),
                alt.Tooltip("kind:N"),
                alt.Tooltip("tip_status:N", title="status"),
                alt.Tooltip("tip_step:N", title="step"),
                alt.Tooltip("tip_start:N", title="starts at"),
                alt.Tooltip("duration:N"),
                alt.Tooltip("tip_tool:N", title="tool"),
                alt.Tooltip("tip_error:N", title="error"),
                alt.Tooltip("tip_tokens:N", title="tokens in / out"),
            ],
        )
    )
    text = alt.Text("duration:N")

    def durations(where: str, x: str, align: str, dx: int, color: str) -> alt.Chart:
        return (
            alt.Chart(drawn)
            .transform_filter(f"datum.label_at == '{where}'")
            .mark_text(align=align, dx=dx, fontSize=11, color=color)  # type: ignore[arg-type]
            .encode(y=y, x=alt.X(f"{x}:Q", scale=x_scale), text=text)
        )

    after = durations("after", "draw_end_ms", "left", 4, LABEL_GREY)
    inside = durations("inside", "draw_end_ms", "right", -4, "white")
    before = durations("before", "start_ms", "right", -4, LABEL_GREY)
    layers: list[Any] = [spans, after, inside, before]
    if len(markers):
        marks = markers.assign(
            at=[f"+{fmt.duration(v)}" for v in markers["at_ms"]],
            detail=[fmt.text(v) for v in markers["detail"]],
        )
        present = _present(marks, "marker")
        legend = alt.Legend(title="marker", orient="top", values=present)
        layers.append(
            alt.Chart(marks)
            .mark_point(size=90, filled=True, opacity=0.95)
            .encode(
                y=y,
                x=alt.X("at_ms:Q", scale=x_scale),
                color=alt.Color("marker:N", scale=colors.scale("marker"), legend=legend),
                shape=alt.Shape(
                    "marker:N",
                    scale=alt.Scale(domain=list(colors.MARKER_SHAPE), range=list(colors.MARKER_SHAPE.values())),
                    legend=legend,
                ),
                tooltip=[alt.Tooltip("marker:N"), alt.Tooltip("detail:N"), alt.Tooltip("at:N", title="at")],
            )
        )
    # A step per row, not a total height: Streamlit fits legends and axes into a total height,
    # which left a short run's rows too thin for their labels. The layer's properties are given at
    # once: each chained call (resolve_scale, properties) copies the whole chart and its parameters.
    return alt.LayerChart(
        layer=layers,
        resolve=alt.Resolve(scale=alt.ScaleResolveMap(color="independent", shape="independent")),
        height=alt.Step(ROW_HEIGHT),
    )


def tokens_per_step(frame: pd.DataFrame) -> Chart:
    """Stacked input/output tokens per step (``step``, ``direction``, ``tokens``)."""
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("step:O", title="step", axis=alt.Axis(labelAngle=0)),
            y=count_y("tokens:Q", "tokens"),
            color=alt.Color(
                "direction:N",
                scale=colors.scale("direction"),
                legend=colors.legend("tokens", _present(frame, "direction"), orient="top"),
            ),
            tooltip=[
                alt.Tooltip("step:O"),
                alt.Tooltip("direction:N"),
                alt.Tooltip("tokens:Q", format=fmt.AXIS_COUNT),
            ],
        )
        .properties(height=220)
    )


def runs_over_time(frame: pd.DataFrame, window: tuple[Any, Any], color: str = "status") -> Chart:
    """Runs per time bucket stacked by ``color`` (``status`` or ``termination_reason``; :func:`frames.runs_per_bucket`),
    over ``window`` (start, end: the data's extent within the filters' window)."""
    return _stacked_over_time(frame, color, "bucket", "runs", "bucket_end", window).properties(height=180)


def terminations_over_time(
    frame: pd.DataFrame,
    time: str = "bucket",
    value: str = "runs",
    end: str | None = None,
    window: tuple[Any, Any] | None = None,
) -> Chart:
    """Stacked bars of runs by termination reason per bucket (``time``, ``termination_reason``,
    ``value``; ``end`` = bucket end, to draw each bar as wide as its bucket; ``window`` fixes
    the time axis, e.g. to the data's extent within the filtered range)."""
    return _stacked_over_time(frame, "termination_reason", time, value, end, window, legend="termination").properties(
        height=240
    )


MEANINGS = {"status": "status", "termination_reason": "termination_reason", "kind": "loop_kind"}


def _stacked_over_time(
    frame: pd.DataFrame,
    color: str,
    time: str,
    value: str,
    end: str | None,
    window: tuple[Any, Any] | None,
    legend: str | None = None,
    meaning: str | None = None,
    unit: str = "runs",
) -> Chart:
    """Bars of ``sum(value)`` per time bucket, stacked by ``color``, counted in whole runs."""
    meaning = meaning or MEANINGS.get(color, color)
    shown = frame.assign(
        when=[
            f"{fmt.timestamp(s, label=False)} – {fmt.timestamp(e, label=False)[11:]} UTC" if end else fmt.timestamp(s)
            for s, e in zip(frame[time], frame[end] if end else frame[time], strict=False)
        ]
    )
    title = legend or color.replace("_", " ")
    return (
        alt.Chart(shown)
        .mark_bar()
        .encode(
            x=time_x(time, window),
            **({"x2": alt.X2(f"{end}:T")} if end else {}),
            y=count_y(f"sum({value}):Q", unit),
            color=alt.Color(
                f"{color}:N",
                title=title,
                scale=colors.scale(meaning, _present(frame, color)),
                legend=colors.legend(title, _present(frame, color)),
            ),
            order=alt.Order(f"{color}:N"),
            tooltip=[
                alt.Tooltip("when:N", title="time (UTC)"),
                alt.Tooltip(f"{color}:N", title=title),
                alt.Tooltip(f"sum({value}):Q", title=unit, format=fmt.AXIS_COUNT),
            ],
        )
    )


def bar_by(
    frame: pd.DataFrame,
    category: str,
    value: str,
    *,
    color: str | None = None,
    meaning: str | None = None,
    title: str | None = None,
    value_format: str = fmt.AXIS_COUNT,
    value_text: str | None = None,
) -> Chart:
    """Horizontal bars of ``value`` per ``category`` (largest first), optionally stacked by ``color``
    in the fixed colours of ``meaning`` (``loop_kind``, ``stall_label``, ``error_class``...).

    ``value_text``: a column of the value as text for the tooltip (durations); else ``value_format``.
    """
    encoding: dict[str, Any] = {
        "y": alt.Y(f"{category}:N", sort="-x", title=None, axis=alt.Axis(labelLimit=260)),
        "x": alt.X(
            f"sum({value}):Q",
            title=title or value.replace("_", " "),
            axis=alt.Axis(format=value_format, tickMinStep=1 if value_format == fmt.AXIS_COUNT else alt.Undefined),
        ),
        "tooltip": [
            alt.Tooltip(f"{category}:N"),
            alt.Tooltip(f"{value_text}:N", title=title or value)
            if value_text
            else alt.Tooltip(f"sum({value}):Q", format=value_format, title=title or value),
        ],
    }
    if color:
        present = _present(frame, color)
        legend_title = color.replace("_", " ")
        scale = colors.scale(meaning, present) if meaning else colors.stable(present)
        encoding["color"] = alt.Color(
            f"{color}:N", title=legend_title, scale=scale, legend=colors.legend(legend_title, present)
        )
        encoding["tooltip"].insert(1, alt.Tooltip(f"{color}:N"))
        encoding["order"] = alt.Order(f"{color}:N")
    rows = frame[category].nunique() if category in frame else 1
    return alt.Chart(frame).mark_bar().encode(**encoding).properties(height=max(140, 28 * rows + AXES_HEIGHT))


LOG_TICKS = (0, 1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000)


def latency(frame: pd.DataFrame) -> Chart:
    """p50 bar and p95 tick per tool (``tool``, ``p50_ms``, ``p95_ms``), on a ms axis."""
    shown = frame.assign(
        p50=[fmt.duration(v) for v in frame["p50_ms"]],
        p95=[fmt.duration(v) for v in frame["p95_ms"]],
    )
    y = alt.Y(
        "tool:N", sort=alt.EncodingSortField("p95_ms", order="descending"), title=None, axis=alt.Axis(labelLimit=240)
    )
    highest = pd.to_numeric(frame["p95_ms"], errors="coerce").max()
    top = next((t for t in LOG_TICKS if t >= (highest if pd.notna(highest) else 1)), LOG_TICKS[-1])
    tooltip = [alt.Tooltip("tool:N"), alt.Tooltip("p50:N", title="p50"), alt.Tooltip("p95:N", title="p95")]
    p50 = (
        alt.Chart(shown)
        .mark_bar(color=colors.SPAN_KIND["tool"], opacity=0.75)
        .encode(
            y=y,
            x=alt.X(
                "p50_ms:Q",
                title="latency (ms, log scale): bar p50, tick p95",
                scale=alt.Scale(type="symlog", constant=1, domain=[0, top]),
                axis=alt.Axis(values=[t for t in LOG_TICKS if t <= top], format=fmt.AXIS_COUNT),
            ),
            tooltip=tooltip,
        )
    )
    p95 = (
        alt.Chart(shown).mark_tick(color=colors.ERROR, thickness=3, size=18).encode(y=y, x="p95_ms:Q", tooltip=tooltip)
    )
    return alt.layer(p50, p95).properties(height=max(140, 28 * frame["tool"].nunique() + AXES_HEIGHT))


def burn_curve(frame: pd.DataFrame, agents_known: Sequence[str] = ()) -> Chart:
    """Input tokens per step, one line per agent (``agent``, ``step``, ``input_tokens``); ``agents_known``
    (every agent of the window) fixes each agent's colour."""
    agents = _present(frame, "agent")
    return (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title="step", axis=alt.Axis(tickMinStep=1, format="d")),
            y=alt.Y("input_tokens:Q", title="input tokens per step", axis=alt.Axis(format=fmt.AXIS_COUNT)),
            color=alt.Color(
                "agent:N",
                title="agent",
                scale=colors.stable(agents, agents_known),
                legend=colors.legend("agent", agents, "stroke"),
            ),
            tooltip=["agent:N", "step:Q", alt.Tooltip("input_tokens:Q", format=fmt.AXIS_COUNT)],
        )
        .properties(height=280)
    )


def events_over_time(
    frame: pd.DataFrame,
    window: tuple[Any, Any] | None,
    color: str = "kind",
    meaning: str = "loop_kind",
    title: str = "count",
) -> Chart:
    """Counts per time bucket stacked by ``color`` (``bucket``, ``bucket_end``, ``color``, ``count``:
    :func:`frames.count_per_bucket`), on a UTC axis over ``window``."""
    return _stacked_over_time(
        frame,
        color,
        "bucket",
        "count",
        "bucket_end",
        window,
        meaning=meaning,
        legend=color.replace("_", " "),
        unit=title,
    ).properties(height=200)


def metric_with_threshold(
    frame: pd.DataFrame, threshold: float | None, time: str = "at", value: str = "value"
) -> Chart:
    """A rule's metric over time as a line with its threshold as a dashed rule."""
    times = frame[time].dropna() if time in frame else pd.Series(dtype="datetime64[ns]")
    window = (times.min(), times.max()) if len(times) > 1 else None
    shown = frame.assign(when=[fmt.timestamp(t) for t in frame[time]], shown=[fmt.text(v) for v in frame[value]])
    line = (
        alt.Chart(shown)
        .mark_line(point=True)
        .encode(
            x=time_x(time, window),
            y=alt.Y(f"{value}:Q", title="value"),
            tooltip=[alt.Tooltip("when:N", title="time (UTC)"), alt.Tooltip("shown:N", title="value")],
        )
    )
    if threshold is None:
        return line.properties(height=160)
    rule = (
        alt.Chart(pd.DataFrame({"threshold": [threshold]}))
        .mark_rule(color=colors.ERROR, strokeDash=[6, 4])
        .encode(y="threshold:Q")
    )
    return alt.layer(line, rule).properties(height=160)


def compare_steps(frame: pd.DataFrame, diverged: int | None = None) -> Chart:
    """Two runs' tokens per step side by side (``run`` (A|B), ``step``, ``tokens``), the step they diverge marked."""
    runs = {"A": "#4e79a7", "B": "#f28e2b"}
    lines = (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title="step", axis=alt.Axis(tickMinStep=1, format="d")),
            y=alt.Y("tokens:Q", title="tokens in the step", axis=alt.Axis(format=fmt.AXIS_COUNT)),
            color=alt.Color(
                "run:N",
                scale=alt.Scale(domain=list(runs), range=list(runs.values())),
                legend=alt.Legend(title="run", symbolType="stroke", orient="top"),
            ),
            tooltip=["run:N", "step:Q", alt.Tooltip("tokens:Q", format=fmt.AXIS_COUNT)],
        )
    )
    layers: list[Any] = [lines]
    if diverged is not None:
        rule = pd.DataFrame({"step": [diverged], "label": [f"the runs diverge at step {diverged}"]})
        layers.append(
            alt.Chart(rule)
            .mark_rule(color=colors.ERROR, strokeDash=[4, 3], strokeWidth=2)
            .encode(x="step:Q", tooltip=[alt.Tooltip("label:N", title="")])
        )
    return alt.layer(*layers).properties(height=220)


# The budget curve's lines: what a value costs (good runs cut) against what it gains.
BUDGET_LINES = {
    "ok_cut_rate": ("successful runs cut", colors.OK),
    "bad_cut_rate": ("bad runs cut", colors.ERROR),
    "tokens_saved_share": ("bad runs' tokens saved", colors.DIRECTION["input"]),
}


def budget_curve(curve: pd.DataFrame, unit: str, recommended: float | None = None, whole: bool = True) -> Chart:
    """One budget kind's curve (``value`` and the rates of :data:`BUDGET_LINES`, as ``/api/v1/budgets`` gives
    them): the share of successful runs cut, of bad runs cut and of the bad runs' tokens saved as the budget
    value grows, with a rule at the recommended value. ``whole``: the values are counts (whole ticks)."""
    present = [c for c in BUDGET_LINES if c in curve]
    long = curve.melt(id_vars=["value"], value_vars=present, var_name="measure", value_name="share").dropna()
    long["measure"] = [BUDGET_LINES[m][0] for m in long["measure"]]
    labels = [BUDGET_LINES[c][0] for c in present]
    # A grid of many values spans decades (1 … 1,000): a log axis keeps the small ones apart.
    log = len(curve) > 12 and float(curve["value"].min()) > 0
    lines = (
        alt.Chart(long)
        .mark_line(point=True, interpolate="step-after")
        .encode(
            x=alt.X(
                "value:Q",
                title=unit,
                scale=alt.Scale(type="log") if log else alt.Undefined,
                axis=alt.Axis(format=fmt.AXIS_COUNT if whole else ",~g", tickMinStep=1 if whole else alt.Undefined),
            ),
            y=alt.Y("share:Q", title=None, axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])),
            color=alt.Color(
                "measure:N",
                title=None,
                scale=alt.Scale(domain=labels, range=[BUDGET_LINES[c][1] for c in present]),
                legend=alt.Legend(orient="top"),
            ),
            tooltip=[
                alt.Tooltip("value:Q", title=unit, format=",~f"),
                alt.Tooltip("measure:N", title="of"),
                alt.Tooltip("share:Q", format=".1%"),
            ],
        )
    )
    if recommended is None:
        return lines.properties(height=260)
    rule = alt.Chart(pd.DataFrame({"value": [recommended]})).mark_rule(strokeDash=[4, 3], color=LABEL_GREY)
    return alt.layer(lines, rule.encode(x="value:Q")).properties(height=260)
