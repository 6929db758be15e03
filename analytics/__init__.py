"""Analytics: one question per module or SQL file, shared by the query API, alerts and dashboard.

Every function takes a DuckDB connection and keyword filters and returns JSON-ready dicts
in the shapes of the collector's ``/api/v1/*`` routes.

Example:
    >>> from loopsight import analytics
    >>> analytics.overview(con, since=datetime(2026, 1, 2), until=datetime(2026, 1, 3))  # doctest: +SKIP
"""

from loopsight.analytics.overview import overview
from loopsight.analytics.runs import list_runs, top_runs_by_tokens, trace_detail
from loopsight.analytics.terminations import terminations
from loopsight.analytics.tools import tool_stats

__all__ = ["list_runs", "overview", "terminations", "tool_stats", "top_runs_by_tokens", "trace_detail"]
