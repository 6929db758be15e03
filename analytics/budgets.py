"""Budget advisor: what max_steps, max_tool_calls, the time and the token budget should be, per agent.

Every stored run of the window is replayed step by step against each candidate value of each
budget (``docs/budgets.md`` is the contract): a run is **cut** when its total exceeds the
value, and the steps after the one where the budget is crossed are not run. For each value the
curve says how many successful runs would have been cut (the price), how many looping, budget-
stopped or failed runs (the gain), how many looping runs and how many of their steps earlier,
and the tokens those bad runs would not have spent. The recommendation is the smallest value
that cuts at most :data:`MAX_OK_CUT` of the successful runs, given at least
:data:`MIN_OK_RUNS` of them.

The replay is one SQL pass over ``run_facts`` and ``run_step_totals`` (``analytics/sql/budgets_*.sql``),
the same text on DuckDB and ClickHouse.

Example:
    >>> budgets(con, agent="research-agent")  # doctest: +SKIP
    {'agents': [{'agent': 'research-agent', 'runs': 240, 'ok_runs': 201, ...,
                 'budgets': [{'kind': 'steps', 'recommended': 7, 'react_field': 'max_steps',
                              'curve': [{'value': 1, 'ok_runs_cut': 201, 'bad_runs_cut': 39, ...}, ...]}, ...]}]}
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from loopsight.analytics.sql import QUESTIONS, Connection, run
from loopsight.format import figure

load = QUESTIONS.load

KINDS = ("steps", "tool_calls", "seconds", "tokens")
"""The budget kinds, in the order they are answered."""

REACT_FIELDS = {"steps": "max_steps", "tool_calls": "max_tool_calls", "seconds": "max_seconds", "tokens": "max_tokens"}
"""Each kind's field of :class:`loopsight.react.ReactConfig` (and ``loopsight.budget.*`` attribute)."""

PLAIN = {
    "steps": "model turns per run",
    "tool_calls": "tool calls per run",
    "seconds": "seconds of wall clock per run",
    "tokens": "input + output tokens per run",
}
"""What a kind's value bounds, for producers other than the reference loop."""

OUTCOMES = ("ok", "looped", "budget", "failed", "other")
BAD = ("looped", "budget", "failed")

MAX_OK_CUT = 0.01
"""The recommendation cuts at most this share of the successful runs (docs/budgets.md says why 1 %)."""

MIN_OK_RUNS = 20
"""Below this many successful runs in the window no value is recommended (the curve is still given)."""

MAX_LIMIT = 100_000
_COUNTS = ("ok_runs_cut", "bad_runs_cut", "tokens_saved", "looped_runs_cut", "looped_steps_avoided")


def _filters(
    since: datetime | None, until: datetime | None, agent: str | None, service: str | None, by_service: bool
) -> dict[str, Any]:
    return {"since": since, "until": until, "agent": agent, "service": service, "by_service": by_service}


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _point(row: dict[str, Any], kind: str, group: dict[str, Any]) -> dict[str, Any]:
    value = row["value"] / 1000 if kind == "seconds" else row["value"]
    looped_cut = int(row["looped_runs_cut"])
    return {
        "value": value,
        "ok_runs_cut": int(row["ok_runs_cut"]),
        "bad_runs_cut": int(row["bad_runs_cut"]),
        "tokens_saved": int(row["tokens_saved"]),
        "looped_runs_cut": looped_cut,
        # how many steps earlier a cut looping run stops, on average
        "looped_steps_avoided": round(int(row["looped_steps_avoided"]) / looped_cut, 2) if looped_cut else None,
        "ok_cut_rate": _ratio(int(row["ok_runs_cut"]), group["ok_runs"]),
        "bad_cut_rate": _ratio(int(row["bad_runs_cut"]), group["bad_runs"]),
        "looped_cut_rate": _ratio(looped_cut, group["looped_runs"]),
        "tokens_saved_share": _ratio(int(row["tokens_saved"]), group["bad_tokens"]),
        "cost_saved_usd": row["cost_saved_usd"],  # None when none of the steps is priced
    }


def recommend(
    curve: list[dict[str, Any]], ok_runs: int, *, max_ok_cut: float = MAX_OK_CUT, min_ok_runs: int = MIN_OK_RUNS
) -> tuple[Any, str | None]:
    """``(value, None)``: the smallest value of ``curve`` cutting at most ``max_ok_cut`` of the
    ``ok_runs``; ``(None, why)`` below ``min_ok_runs`` successful runs.

    Example:
        >>> curve = [{"value": v, "ok_runs_cut": c} for v, c in [(1, 40), (2, 9), (3, 1), (4, 0)]]
        >>> recommend(curve, 100)
        (3, None)
        >>> recommend(curve, 12)
        (None, 'fewer than 20 successful runs in the window (12)')
    """
    if not curve:
        return None, "no run in the window records this figure"  # e.g. tokens a producer never sent
    if ok_runs < min_ok_runs:
        return None, f"fewer than {min_ok_runs} successful runs in the window ({ok_runs})"
    for point in sorted(curve, key=lambda p: p["value"]):
        if point["ok_runs_cut"] <= max_ok_cut * ok_runs:
            return point["value"], None
    return None, "no value cuts few enough successful runs"  # the largest value cuts none: not reached


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.3g} %"


def summary(kind: str, point: dict[str, Any] | None, value: Any, react: bool) -> str:
    """One line saying what the recommended value would have done.

    Example:
        >>> p = {"looped_cut_rate": 0.94, "looped_steps_avoided": 5.0, "ok_cut_rate": 0.015, "tokens_saved_share": 0.41}
        >>> summary("steps", p, 6, True)
        'max_steps 6: 94 % of looping runs stopped 5 steps earlier, 1.5 % of good runs cut, 41 % of wasted tokens saved'
    """
    if point is None:
        return ""
    name = f"{REACT_FIELDS[kind]} {figure(value)}" if react else f"at most {figure(value)} {PLAIN[kind]}"
    looped = (
        f"{_pct(point['looped_cut_rate'])} of looping runs stopped {figure(point['looped_steps_avoided'])} steps earlier"
        if point.get("looped_steps_avoided") is not None
        else "no looping run stopped"
    )
    return f"{name}: {looped}, {_pct(point['ok_cut_rate'])} of good runs cut, {_pct(point['tokens_saved_share'])} of wasted tokens saved"


def _distribution(rows: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    by_outcome = {r["outcome"]: r for r in rows}
    found = {}
    for outcome in OUTCOMES:
        row = by_outcome.get(outcome)
        if row is None:
            found[outcome] = {"runs": 0, "p50": None, "p90": None, "p99": None, "max": None}
            continue
        found[outcome] = {
            "runs": int(row["runs"]),
            **{stat: row[f"{kind}_{stat}"] for stat in ("p50", "p90", "p99", "max")},
        }
    return found


def budgets(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    by_service: bool = False,
    max_ok_cut: float = MAX_OK_CUT,
    min_ok_runs: int = MIN_OK_RUNS,
) -> dict[str, list[dict[str, Any]]]:
    """The ``/api/v1/budgets`` answer: per agent (per agent and service with ``by_service``) the
    runs by outcome and, per budget kind, the recommendation, the distribution and the curve.

    Example:
        >>> budgets(con, agent="support")["agents"][0]["budgets"][0]["kind"]  # doctest: +SKIP
        'steps'
    """
    params = _filters(since, until, agent, service, by_service)
    dist_rows = run(con, "budgets_distribution", load("budgets_distribution"), params)
    curve_rows = run(con, "budgets_curve", load("budgets_curve"), params)
    configured_rows = run(con, "budgets_configured", load("budgets_configured"), params)

    groups: dict[tuple[Any, Any], dict[str, Any]] = {}
    dists: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for row in dist_rows:
        key = (row["agent"], row["service"])
        group = groups.setdefault(
            key, {"runs": 0, "bad_tokens": 0, "bad_cost_usd": None, **{f"{o}_runs": 0 for o in OUTCOMES}}
        )
        group["runs"] += int(row["runs"])
        group[f"{row['outcome']}_runs"] = int(row["runs"])
        if row["outcome"] in BAD:
            group["bad_tokens"] += int(row["tokens"] or 0)
            if row["cost_usd"] is not None:
                group["bad_cost_usd"] = round((group["bad_cost_usd"] or 0.0) + row["cost_usd"], 9)
        dists.setdefault(key, []).append(row)
    for group in groups.values():
        group["bad_runs"] = sum(group[f"{o}_runs"] for o in BAD)
        if not group["bad_runs"]:
            group["bad_cost_usd"] = 0.0  # nothing to price (as burn's cost_on_failures_usd)
    curves: dict[tuple[Any, Any, str], list[dict[str, Any]]] = {}
    for row in curve_rows:  # in value order
        key = (row["agent"], row["service"])
        if key not in groups:
            continue
        curve = curves.setdefault((*key, row["kind"]), [])
        point = _point(row, row["kind"], groups[key])
        # a value answering as the one below it adds nothing (a figure of an ok run's step moved no count)
        if not curve or any(curve[-1][name] != point[name] for name in _COUNTS):
            curve.append(point)
    configured = {(r["agent"], r["service"]): r for r in configured_rows}

    agents = []
    for key in sorted(groups, key=lambda k: (k[0] is None, k[0] or "", k[1] or "")):
        group = groups[key]
        recorded = configured.get(key, {})
        react = any(recorded.get(field) is not None for field in REACT_FIELDS.values())
        kinds = []
        for kind in KINDS:
            curve = curves.get((*key, kind), [])
            value, why = recommend(curve, group["ok_runs"], max_ok_cut=max_ok_cut, min_ok_runs=min_ok_runs)
            at = next((p for p in curve if p["value"] == value), None) if value is not None else None
            kinds.append(
                {
                    "kind": kind,
                    "recommended": value,
                    "reason": why,
                    "react_field": REACT_FIELDS[kind],
                    "configured": recorded.get(REACT_FIELDS[kind]),
                    "at_recommended": at,
                    "summary": summary(kind, at, value, react),
                    "distribution": _distribution(dists[key], kind),
                    "curve": curve,
                }
            )
        entry: dict[str, Any] = {"agent": key[0]}
        if by_service:
            entry["service"] = key[1]
        entry |= {
            "runs": group["runs"],
            "ok_runs": group["ok_runs"],
            "bad_runs": group["bad_runs"],
            "looped_runs": group["looped_runs"],
            "budget_runs": group["budget_runs"],
            "failed_runs": group["failed_runs"],
            "other_runs": group["other_runs"],
            "bad_tokens": group["bad_tokens"],
            "bad_cost_usd": group["bad_cost_usd"],
            "cost_distribution": _distribution(dists[key], "cost"),
            "reference_loop": react,
            "budgets": kinds,
        }
        agents.append(entry)
    return {"agents": agents}


def budget_replay(
    con: Connection,
    *,
    kind: str,
    value: float,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
    only_cut: bool = True,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """Each run replayed under one budget (``kind`` at ``value``, seconds for ``seconds``): cut runs
    first, most tokens saved first (the ``/api/v1/budgets/runs`` list).

    Each item: ``trace_id``, ``run_id``, ``outcome``, ``total`` (the run's figure), ``cut``,
    ``steps``, ``steps_kept``, ``last_step`` (the step number the budget stops the run at),
    ``loop_first_step`` (where its earliest loop began, or null), ``tokens``, ``tokens_saved``,
    ``cost_saved_usd`` (what those tokens cost; null when none of the run's steps is priced).

    Example:
        >>> budget_replay(con, kind="steps", value=6, agent="research-agent", limit=1)  # doctest: +SKIP
        [{'trace_id': '…', 'outcome': 'looped', 'total': 12, 'cut': True, 'steps': 12, 'steps_kept': 6,
          'last_step': 5, 'loop_first_step': 3, 'tokens': 48210, 'tokens_saved': 30120, ...}]
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}")
    params = _filters(since, until, agent, service, False) | {
        "kind": kind,
        "value": float(value),
        "only_cut": only_cut,
        "limit": max(0, min(limit, MAX_LIMIT)),
    }
    found = run(con, "budgets_replay", load("budgets_replay"), params)
    for row in found:
        for name in ("steps", "steps_kept", "tokens", "tokens_saved"):
            row[name] = int(row[name])
        if kind != "seconds":
            row["total"] = int(row["total"])
    return found
