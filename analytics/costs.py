"""What the models cost: per (provider, model) pair, its calls, tokens and cost, and the prices applied.

Each call's cost is stored when it is derived (``run_calls``, priced against ``model_prices`` by
the rules ``PRICE_OF_CALL`` and ``CALL_COST`` of :mod:`loopsight.vocabulary`, and again when the
writer's prices change; read through ``analytics/sql/priced_calls.sql``), so every figure follows
the prices the store's writer resolved when it last opened (``docs/cost.md``). An unpriced model's cost is ``None``, never 0.

Example:
    >>> models(con, agent="research-agent")  # doctest: +SKIP
    [{'provider': 'openai', 'model': 'gpt-4o', 'priced': True, 'priced_as': 'openai/gpt-4o',
      'source': 'genai-prices 0.2.3', 'calls': 82, 'cost_usd': 0.139, ..., 'prices': [{'input': 2.5, ...}]}]
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from loopsight.analytics.sql import Connection, jsonable, query
from loopsight.prices import EARLIEST, LATEST, MAX_INPUT

PRICE_KEYS = (("input_mtok", "input"), ("cache_read_mtok", "cached_input"), ("cache_write_mtok", "cache_write"))


_OPEN = (jsonable(EARLIEST), jsonable(LATEST), 0, MAX_INPUT)


def _price(row: dict[str, Any]) -> dict[str, Any]:
    """A price row in the price file's terms (USD per million tokens; ``None`` cache price: billed
    as input; ``None`` bounds: open)."""
    return {
        "valid_from": None if row["valid_from"] == _OPEN[0] else row["valid_from"],
        "valid_until": None if row["valid_until"] == _OPEN[1] else row["valid_until"],
        "input_from": row["input_from"],
        "input_to": None if row["input_to"] == _OPEN[3] else row["input_to"],
        **{name: row[key] for key, name in PRICE_KEYS},
        "output": row["output_mtok"],
    }


def models(
    con: Connection,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    agent: str | None = None,
    service: str | None = None,
) -> list[dict[str, Any]]:
    """One row per (provider, model) pair of the runs started in [since, until), most spent first.

    Each row: ``provider`` and ``model`` as the spans name them (``None``: not given),
    ``priced``, ``priced_as`` (the price table's name for it) and ``source`` (``genai-prices
    <version>`` or the price file), ``calls``, ``unpriced_calls``, ``input_tokens`` (cached
    included), ``output_tokens``, ``cache_read_input_tokens``, ``cache_write_input_tokens``,
    ``cost_usd`` and ``prices``: ``[{"valid_from", "valid_until", "input_from", "input_to",
    "input", "cached_input", "cache_write", "output"}]`` in USD per million tokens, one per date
    range and input tier (a call with ``input_from <= input tokens < input_to`` pays that tier's
    prices for all its tokens; ``None`` bounds are open; a ``None`` cache price: billed as input).

    Example:
        >>> [m["model"] for m in models(con)]  # doctest: +SKIP
        ['gpt-4o', 'claude-3-5-haiku', 'gpt-4o-mini']
    """
    usage = query(con, "models", since=since, until=until, agent=agent, service=service)
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for price in query(con, "model_prices"):
        rows.setdefault((price["provider"], price["model"]), []).append(price)
    out = []
    for u in usage:
        found = rows.get((u["provider"], u["model"]), [])
        priced = [p for p in found if p["input_mtok"] is not None]
        out.append(
            {
                "provider": u["provider"] or None,
                "model": u["model"] or None,
                "priced": bool(priced),
                "priced_as": priced[0]["priced_as"] if priced else None,
                "source": priced[0]["source"] if priced else None,
                "calls": int(u["calls"]),
                "unpriced_calls": int(u["unpriced_calls"]),
                "input_tokens": int(u["input_tokens"] or 0),
                "output_tokens": int(u["output_tokens"] or 0),
                "cache_read_input_tokens": int(u["cache_read_input_tokens"] or 0),
                "cache_write_input_tokens": int(u["cache_write_input_tokens"] or 0),
                "cost_usd": u["cost_usd"],
                "prices": [_price(p) for p in priced],
            }
        )
    return out


def trace_costs(con: Connection, trace_id: str) -> list[dict[str, Any]]:
    """The model calls of one trace with their cost (``None``: unpriced): ``run_id``, ``span_id``,
    ``step``, ``provider``, ``model``, cache tokens, ``priced``, ``cost_usd``."""
    return query(con, "trace_costs", trace_id=trace_id)
