"""Analytics: one question per module or SQL file, shared by the query API, alerts and dashboard.

Every function takes a DuckDB connection and keyword filters and returns JSON-ready dicts
in the shapes of the collector's ``/api/v1/*`` routes.
"""

from loopsight.analytics.runs import list_runs, trace_detail

__all__ = ["list_runs", "trace_detail"]
