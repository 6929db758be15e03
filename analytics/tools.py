"""Tools: calls, fail rate by error class, retries and latency percentiles, per agent.

Example:
    >>> tool_stats(con, agent="order-assistant")  # doctest: +SKIP
    [{'tool': 'query_order', 'calls': 120, 'errors': 6, 'fail_rate': 0.05,
      'errors_by_class': {'transient': 5, 'permanent': 1}, 'retries': 9, 'p50_ms': 41.0, 'p95_ms': 380.2}]
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from loopsight.analytics.sql import Connection, query


def tool_stats(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    tool: str | None = None,
    by_agent: bool = False,
) -> list[dict[str, Any]]:
    """One row per tool (per tool and agent with ``by_agent=True``), most called first.

    Each row is ``{"tool", "calls", "errors", "fail_rate", "errors_by_class", "retries",
    "p50_ms", "p95_ms", "turns_after_failures", "tokens_after_failures",
    "cost_after_failures_usd"}`` (plus ``"agent"`` when ``by_agent``). An error is a tool span with
    status Error; ``errors_by_class`` counts them by ``loopsight.error.class``
    (``"unclassified"`` when the producer gave none); ``retries`` sums ``attempts - 1``.
    A call's agent is its run's agent; times filter the tool span's start. The turns after
    failures are the model turns that read a failure of the tool (the step after it), with their
    tokens and cost (``None`` when none of them is priced; ``0`` with no failure).

    Example:
        >>> tool_stats(con, by_agent=True)[0]["agent"]  # doctest: +SKIP
        'order-assistant'
    """
    rows = query(
        con, "tool_stats", since=since, until=until, agent=agent, service=service, tool=tool, by_agent=by_agent
    )
    after = {
        (r["tool"], r["agent"]): r
        for r in query(
            con,
            "tool_failure_costs",
            since=since,
            until=until,
            agent=agent,
            service=service,
            tool=tool,
            by_agent=by_agent,
        )
    }
    for row in rows:
        row["errors_by_class"] = {k: int(v) for k, v in sorted(row["errors_by_class"].items())}
        row["retries"] = int(row["retries"] or 0)
        turns = after.get((row["tool"], row["agent"]))
        row["turns_after_failures"] = int(turns["turns_after_failures"]) if turns else 0
        row["tokens_after_failures"] = int(turns["tokens_after_failures"] or 0) if turns else 0
        row["cost_after_failures_usd"] = turns["cost_after_failures_usd"] if turns else 0.0
        if not by_agent:
            del row["agent"]
    return rows
