"""Sessions: the runs of one conversation (a producer's ``gen_ai.conversation.id``, ``session.id``,
Langfuse's session, LangGraph's ``thread_id``), with their tokens, cost and loops.

Example:
    >>> sessions(con, agent="support_agent")  # doctest: +SKIP
    [{'session_id': 'sess-1', 'runs': 2, 'first_started_at': '…', 'last_started_at': '…',
      'input_tokens': 2100, 'output_tokens': 180, 'cost_usd': 0.0071, 'unpriced_calls': 0, 'loops': 1}]
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from loopsight.analytics.sql import Connection, query

MAX_LIMIT = 10_000


def sessions(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    session: str | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """The sessions with a run started in [since, until), the most recently active first (the
    ``/api/v1/sessions`` list): ``session_id``, ``runs``, ``first_started_at``,
    ``last_started_at``, ``input_tokens``, ``output_tokens``, ``cost_usd`` (its runs' priced calls;
    ``None`` when none is priced), ``unpriced_calls`` and ``loops`` (its runs' loops and those across
    its runs). ``session``: that session only, its figures over all its runs in the window. The runs
    of one: ``list_runs(con, session=...)``."""
    return query(
        con,
        "sessions",
        since=since,
        until=until,
        agent=agent,
        service=service,
        session=session,
        limit=max(0, min(limit, MAX_LIMIT)),
    )
