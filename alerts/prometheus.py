"""Prometheus text exposition of gauges and counters (``# HELP`` / ``# TYPE`` once per name).

Example:
    >>> from loopsight.analytics.metrics import Gauge
    >>> prometheus_lines([Gauge("loopsight_tool_fail_rate", 0.5, (("tool", 'say "hi"'),), "Fail rate.")])
    ['# HELP loopsight_tool_fail_rate Fail rate.', '# TYPE loopsight_tool_fail_rate gauge', 'loopsight_tool_fail_rate{tool="say \\\\"hi\\\\""} 0.5']
"""

from __future__ import annotations

import math

from loopsight.analytics.metrics import Gauge


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return (
        repr(float(value))
        if not float(value).is_integer()
        else str(int(value))
        if abs(value) < 1e15
        else repr(float(value))
    )


def prometheus_lines(series: list[Gauge]) -> list[str]:
    """Lines for ``/metrics``: names ending in ``_total`` are counters, the rest gauges."""
    lines: list[str] = []
    described: set[str] = set()
    for name in dict.fromkeys(g.name for g in series):
        for g in (g for g in series if g.name == name):
            if name not in described:
                described.add(name)
                if g.help:
                    lines.append(f"# HELP {name} {g.help}")
                lines.append(f"# TYPE {name} {'counter' if name.endswith('_total') else 'gauge'}")
            labels = ",".join(f'{k}="{_escape(v)}"' for k, v in g.labels)
            lines.append(f"{name}{{{labels}}} {_number(g.value)}" if labels else f"{name} {_number(g.value)}")
    return lines
