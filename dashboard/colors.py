"""One colour scale per meaning, the same on every page.

Each scale's domain is fixed (every value the vocabulary knows), so a kind keeps its colour
when a filter removes the others; the legend lists only the values drawn. Success is green,
errors red; the error classes, loop kinds, stall kinds and termination reasons each have one
colour, reused where the meaning repeats (``fatal`` is the same dark red as a class and as the
``fatal_error`` termination, ``repeated_error`` the same pink as a loop kind and a termination).

Example:
    >>> STATUS["ok"], STATUS["error"], TERMINATION["completed"] == STATUS["ok"]
    ('#2e9e4f', '#d62728', True)
    >>> scale("loop_kind", ["semantic"]).to_dict()["domain"][:2]
    ['exact', 'oscillation']
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import Any

import altair as alt

OK = "#2e9e4f"
ERROR = "#d62728"
NEUTRAL = "#8c8c8c"

STATUS = {"ok": OK, "error": ERROR}
ERROR_CLASS = {
    "transient": "#f28e2b",
    "invalid_argument": "#b07aa1",
    "permanent": "#e15759",
    "fatal": "#8b1a1a",
    "empty_result": "#e0b000",
    "garbage": "#9c755f",
}
LOOP_KIND = {
    "exact": "#4e79a7",
    "oscillation": "#76b7b2",
    "repeated_error": "#ec7a91",
    "semantic": "#7a5195",
    "no_progress": "#bcbd22",
}
LOOP_SCOPE = {"run": "#4e79a7", "session": "#f28e2b"}
STALL_KIND = {
    "slow_call": "#f28e2b",
    "backoff": "#e0b000",
    "idle_gap": "#79706e",
    "stuck": "#a0307a",
}
# The Stalls page writes its kinds out; the same colours under those names.
STALL_LABELS = {"slow_call": "slow call", "backoff": "retry backoff", "idle_gap": "idle gap", "stuck": "stuck"}
TERMINATION = {
    "completed": OK,
    "max_steps": "#f28e2b",
    "max_tool_calls": "#f0a860",
    "timeout": "#e0b000",
    "token_budget": "#7a5195",
    "loop_detected": LOOP_KIND["exact"],
    "repeated_error": LOOP_KIND["repeated_error"],
    "fatal_error": ERROR_CLASS["fatal"],
    "cancelled": "#bab0ac",
    "error": ERROR,
}
# A run's outcome as the budget advisor sorts runs (docs/budgets.md): ok is the price of a budget, the rest its gain.
BUDGET_OUTCOME = {
    "ok": OK,
    "looped": LOOP_KIND["exact"],
    "budget": TERMINATION["max_steps"],
    "failed": ERROR,
    "other": TERMINATION["cancelled"],
}
SPAN_KIND = {"agent": "#4c78a8", "llm": "#9467bd", "tool": "#17a2b8", "other": "#a0a0a0", "failed": ERROR}
MARKER = {"error": ERROR, "retry": "#f28e2b", "loop": "#e377c2"}
MARKER_SHAPE = {"error": "cross", "retry": "diamond", "loop": "triangle-down"}
DIRECTION = {"input": "#9467bd", "output": "#c5b0d5"}

SCALES: dict[str, dict[str, str]] = {
    "status": STATUS,
    "error_class": ERROR_CLASS,
    "loop_kind": LOOP_KIND,
    "loop_scope": LOOP_SCOPE,
    "budget_outcome": BUDGET_OUTCOME,
    "stall_kind": STALL_KIND,
    "stall_label": {STALL_LABELS[k]: v for k, v in STALL_KIND.items()},
    "termination_reason": TERMINATION,
    "span_kind": SPAN_KIND,
    "marker": MARKER,
    "direction": DIRECTION,
}
# A colour per agent (or any open-ended category): stable across filters because it comes
# from the name, not from the position among the values shown.
PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#e15759"]


def scale(meaning: str, present: Iterable[Any] = ()) -> alt.Scale:
    """The fixed scale of ``meaning``; unknown ``present`` values are added in grey, at the end."""
    colors = dict(SCALES[meaning])
    for value in present:
        colors.setdefault(str(value), NEUTRAL)
    return alt.Scale(domain=list(colors), range=list(colors.values()))


def stable(values: Iterable[Any], universe: Iterable[Any] = ()) -> alt.Scale:
    """A scale for open-ended names (agents): a name keeps its colour when a filter hides the others.

    Colours go by position among ``universe`` (every agent of the window, say) when given,
    so no two of them share one while the palette lasts; else by a hash of the name.

    Example:
        >>> stable(["b"], universe=["a", "b", "c"]).to_dict()["range"] == [PALETTE[1]]
        True
    """
    names = sorted({str(v) for v in values})
    known = sorted({str(v) for v in universe} | set(names)) if universe else []
    if known:
        shades = [PALETTE[known.index(n) % len(PALETTE)] for n in names]
    else:
        shades = [PALETTE[zlib.crc32(n.encode()) % len(PALETTE)] for n in names]
    return alt.Scale(domain=names, range=shades)


def legend(title: str, present: Iterable[Any], symbol: str = "square", **kwargs: Any) -> alt.Legend:
    """A legend listing only the values drawn (the scale keeps its whole domain), with the marks' symbol."""
    values = sorted({str(v) for v in present})
    return alt.Legend(title=title, values=values, symbolType=symbol, **kwargs)
