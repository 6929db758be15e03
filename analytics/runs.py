"""Runs: the list with filters, and one trace in detail.

Example:
    >>> list_runs(con, limit=10, agent="order-assistant")  # doctest: +SKIP
    [{'trace_id': '...', 'run_id': '...', 'agent': 'order-assistant', ...}]
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb

from loopsight.analytics.sql import query

MAX_LIMIT = 10_000


def list_runs(
    con: duckdb.DuckDBPyConnection,
    *,
    limit: int = 50,
    offset: int = 0,
    agent: str | None = None,
    service: str | None = None,
    status: str | None = None,
    termination_reason: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    trace_id: str | None = None,
) -> list[dict[str, Any]]:
    """Runs newest first, each with its rollups (steps, calls, errors, tokens, loops)."""
    return query(
        con,
        "runs",
        limit=max(0, min(limit, MAX_LIMIT)),
        offset=max(0, offset),
        agent=agent,
        service=service,
        status=status,
        termination_reason=termination_reason,
        since=since,
        until=until,
        trace_id=trace_id,
    )


def trace_detail(con: duckdb.DuckDBPyConnection, trace_id: str) -> dict[str, list[dict[str, Any]]]:
    """The runs of one trace and all its spans (``{"runs": [...], "spans": [...]}``)."""
    return {
        "runs": list_runs(con, trace_id=trace_id, limit=MAX_LIMIT),
        "spans": query(con, "trace_spans", trace_id=trace_id),
    }
