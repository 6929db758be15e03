"""Analytics: one question per module or SQL file, shared by the query API, alerts and dashboard.

Every function takes a DuckDB connection and keyword filters and returns JSON-ready dicts
in the shapes of the collector's ``/api/v1/*`` routes.

Example:
    >>> from loopsight import analytics
    >>> analytics.overview(con, since=datetime(2026, 1, 2), until=datetime(2026, 1, 3))  # doctest: +SKIP
"""

from loopsight.analytics.budgets import budget_replay, budgets
from loopsight.analytics.burn import burn, burn_agents, burn_curve, burn_runs
from loopsight.analytics.costs import models, trace_costs
from loopsight.analytics.loops import (
    loop_counts,
    loop_rate,
    loop_run_ids,
    loops,
    loops_over_time,
    loops_page,
    top_looping_args,
    top_looping_tools,
)
from loopsight.analytics.overview import overview
from loopsight.analytics.runs import (
    VALUE_FIELDS,
    count_runs,
    field_values,
    list_runs,
    search_traces,
    top_runs_by_tokens,
    trace_detail,
)
from loopsight.analytics.sessions import MAX_LIMIT as SESSIONS_LIMIT
from loopsight.analytics.sessions import sessions
from loopsight.analytics.stalls import stall_counts, stalls, time_to_first_tool
from loopsight.analytics.terminations import terminations
from loopsight.analytics.tools import tool_stats

__all__ = [
    "SESSIONS_LIMIT",
    "VALUE_FIELDS",
    "budget_replay",
    "budgets",
    "burn",
    "burn_agents",
    "burn_curve",
    "burn_runs",
    "count_runs",
    "field_values",
    "list_runs",
    "loop_counts",
    "loop_rate",
    "loop_run_ids",
    "loops",
    "loops_over_time",
    "loops_page",
    "models",
    "overview",
    "search_traces",
    "sessions",
    "stall_counts",
    "stalls",
    "terminations",
    "time_to_first_tool",
    "tool_stats",
    "top_looping_args",
    "top_looping_tools",
    "top_runs_by_tokens",
    "trace_costs",
    "trace_detail",
]
