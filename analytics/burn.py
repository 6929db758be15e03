"""Token burn: how input tokens grow per step (fitted exponent per agent), tokens per outcome, per run.

``growth_exponent`` is k in ``input(s) - input(first step) ~ (s - first step)^k``, fitted by
least squares in log-log space with one intercept per run. Replaying the whole history each
step gives k ≈ 1, compressing or windowing the context gives k < 1, and an agent is flagged
``superlinear`` when k ≥ 1.2 and k − 2·SE > 1, from at least 3 runs and 10 points (the
rule in ``docs/detection.md``).

Example:
    >>> burn(con, agent="research-bot")  # doctest: +SKIP
    {'agents': [{'agent': 'research-bot', 'runs': 40, 'growth_exponent': 1.93, 'superlinear': True,
                 'tokens_per_success': 18230.5, 'tokens_on_failures': 120400}],
     'runs': [{'trace_id': '…', 'run_id': '…', 'agent': 'research-bot', 'input_tokens': 30120,
               'output_tokens': 1201, 'wasted_tokens': 9800}]}
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from loopsight.analytics.sql import QUESTIONS, Connection, run

compose = QUESTIONS.compose

SUPERLINEAR_K = 1.2
MIN_RUNS = 3
MIN_POINTS = 10
MAX_LIMIT = 100_000


def _filters(since: datetime | None, until: datetime | None, agent: str | None, service: str | None) -> dict[str, Any]:
    return {"since": since, "until": until, "agent": agent, "service": service}


def burn_agents(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
) -> list[dict[str, Any]]:
    """Per agent: ``runs``, ``growth_exponent``, ``superlinear``, ``tokens_per_success``, ``tokens_on_failures``.

    Also ``growth_exponent_se`` (its standard error) and ``fit_points``; the exponent is
    ``None`` when no run of the agent has two steps beyond its first.

    Example:
        >>> burn_agents(con)  # doctest: +SKIP
        [{'agent': 'support', 'runs': 120, 'growth_exponent': 1.01, 'superlinear': False, ...}]
    """
    sql = compose("burn_agents", growth_rows="burn_growth_derived")
    params = _filters(since, until, agent, service) | {
        "superlinear_k": SUPERLINEAR_K,
        "min_runs": MIN_RUNS,
        "min_points": MIN_POINTS,
    }
    return run(con, "burn_agents", sql, params)


def burn_runs(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """The runs with the most tokens: ``input_tokens``, ``output_tokens`` and ``wasted_tokens`` (after a loop began).

    Example:
        >>> burn_runs(con, limit=1)  # doctest: +SKIP
        [{'trace_id': '…', 'run_id': '…', 'agent': 'support', 'input_tokens': 41200, 'output_tokens': 900, 'wasted_tokens': 0}]
    """
    sql = compose("burn_runs", loop_rows="loops_derived")
    params = _filters(since, until, agent, service) | {"limit": max(0, min(limit, MAX_LIMIT)), "kind": None}
    return run(con, "burn_runs", sql, params)


def burn(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    limit: int = 100,
) -> dict[str, list[dict[str, Any]]]:
    """The ``/api/v1/burn`` answer: ``{"agents": burn_agents(...), "runs": burn_runs(...)}``.

    Example:
        >>> sorted(burn(con))  # doctest: +SKIP
        ['agents', 'runs']
    """
    return {
        "agents": burn_agents(con, since=since, until=until, agent=agent, service=service),
        "runs": burn_runs(con, since=since, until=until, agent=agent, service=service, limit=limit),
    }


def burn_curve(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    max_step: int = 50,
) -> list[dict[str, Any]]:
    """Input tokens per step per agent (``runs``, ``avg_input_tokens``, ``p50_input_tokens``, ``p95_input_tokens``).

    Example:
        >>> burn_curve(con, agent="support", max_step=2)  # doctest: +SKIP
        [{'agent': 'support', 'step': 0, 'runs': 120, 'avg_input_tokens': 910.2, ...}, ...]
    """
    sql = compose("burn_curve", burn_steps="burn_steps_derived")
    return run(con, "burn_curve", sql, _filters(since, until, agent, service) | {"max_step": max(0, max_step)})
