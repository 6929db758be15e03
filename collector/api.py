"""The query API ``/api/v1/*``: thin HTTP over the analytics questions.

Parameters are validated here (a bad one is a 400 naming it); the analytics layer gets
typed values and binds them as SQL parameters.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from loopsight import alerts, analytics
from loopsight.analytics.budgets import KINDS as BUDGET_KINDS
from loopsight.analytics.sql import Connection
from loopsight.analytics.stalls import STALL_KINDS, STUCK_MAX_AGE_SECONDS
from loopsight.attributes import LOOP_KINDS
from loopsight.config import DurationTooLong, parse_duration
from loopsight.errors import LoopsightError
from loopsight.stores import STORE_ERRORS
from loopsight.stores.protocol import Reader

log = logging.getLogger("loopsight.collector")

_HEX = re.compile(r"^[0-9a-f]{32}$")


class BadParameter(LoopsightError, ValueError):
    """A query parameter that cannot be used; answered 400."""


class NotFound(LoopsightError, LookupError):
    """Nothing is stored for what the path names; answered 404."""


def _utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


_EPOCH = datetime(1970, 1, 1)


def parse_time(name: str, value: str | None, now: datetime | None = None) -> datetime | None:
    """ISO-8601 (``2026-11-30T10:00:00Z``) or a relative ``-15m`` / ``-2h`` / ``-7d`` before ``now``
    (default: now; one request's times share one), as naive UTC."""
    if value is None or value == "":
        return None
    if len(value) > 64:
        raise BadParameter(f"{name} is longer than 64 characters")
    text = value.strip()
    try:
        if text.startswith("-"):
            return (now or _utcnow()) - timedelta(seconds=parse_duration(text[1:]))
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    except DurationTooLong:
        raise BadParameter(f"{name}={value!r} reaches back more than 100 years") from None
    except (ValueError, OverflowError):
        raise BadParameter(f"{name}={value!r} is not an ISO-8601 time or a relative time like -15m") from None
    return parsed


def time_window(since: datetime | None, until: datetime | None) -> tuple[datetime | None, datetime | None]:
    """``since`` and ``until`` checked in order, then read as no earlier than 1970: no span starts
    before the epoch (OTLP counts from it), and ClickHouse cannot take year 1.

    >>> time_window(datetime(1960, 1, 1), datetime(1965, 1, 1))
    (datetime.datetime(1970, 1, 1, 0, 0), datetime.datetime(1970, 1, 1, 0, 0))
    """
    if since is not None and until is not None and since >= until:
        raise BadParameter("since must be before until")
    return (None if since is None else max(since, _EPOCH)), (None if until is None else max(until, _EPOCH))


_INTEGER = re.compile(r"-?[0-9]{1,18}")


def parse_int(name: str, value: str | None, default: int, low: int, high: int) -> int:
    """An integer query parameter within [low, high]."""
    if value is None or value == "":
        return default
    if _INTEGER.fullmatch(value) is None:  # int() takes "+5", "1_000", " 7" and non-ASCII digits too
        raise BadParameter(f"{name}={value[:64]!r} is not an integer")
    number = int(value)
    if not low <= number <= high:
        raise BadParameter(f"{name}={number} is out of range [{low}, {high}]")
    return number


def parse_text(name: str, value: str | None, max_length: int = 512) -> str | None:
    """A free-text filter (bound as a parameter, so only its length and control characters are limited)."""
    if value is None or value == "":
        return None
    if len(value) > max_length:
        raise BadParameter(f"{name} is longer than {max_length} characters")
    if "\x00" in value:
        raise BadParameter(f"{name} contains a NUL character")
    return value


def parse_number(name: str, value: str | None, low: float, high: float) -> float | None:
    """A finite number query parameter within [low, high] (``None`` when absent)."""
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except ValueError:
        raise BadParameter(f"{name}={value[:64]!r} is not a number") from None
    if not low <= number <= high:  # also NaN
        raise BadParameter(f"{name}={value[:64]} is out of range [{low:g}, {high:g}]")
    return number


def parse_choice(name: str, value: str | None, choices: tuple[str, ...], default: str | None = None) -> str | None:
    """One of a closed set of values."""
    if value is None or value == "":
        return default
    if value not in choices:
        raise BadParameter(f"{name}={value[:64]!r} is not one of {', '.join(choices)}")
    return value


def _filters(request: Request) -> dict[str, Any]:
    q = request.query_params
    now = _utcnow()
    since, until = time_window(parse_time("since", q.get("since"), now), parse_time("until", q.get("until"), now))
    return {
        "agent": parse_text("agent", q.get("agent")),
        "service": parse_text("service", q.get("service")),
        "since": since,
        "until": until,
    }


def query_routes(reader: Callable[[], Reader]) -> list[Route]:
    """The ``/api/v1`` routes reading through ``reader()`` (a fresh connection per request)."""

    async def answer(request: Request, work: Callable[[Reader], Any]) -> JSONResponse:
        def run() -> Any:
            con = reader()
            try:
                return work(con)
            finally:
                con.close()

        try:
            return JSONResponse(await run_in_threadpool(run))
        except NotFound as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        except (BadParameter, ValueError, OverflowError) as exc:  # bad arguments; dates near year 1 or 9999
            return JSONResponse({"error": str(exc)}, status_code=400)
        except STORE_ERRORS as exc:
            log.error("query %s failed: %s", request.url.path, exc)
            return JSONResponse({"error": f"query failed: {type(exc).__name__}"}, status_code=500)

    def endpoint(parse: Callable[[Request], Any], work: Callable[[Reader, Any], Any]) -> Callable[[Request], Any]:
        """A handler that validates with ``parse`` (BadParameter -> 400) before touching the store."""

        async def handle(request: Request) -> JSONResponse:
            try:
                params = parse(request)
            except BadParameter as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)
            return await answer(request, lambda con: work(con, params))

        return handle

    def run_filters(request: Request) -> dict[str, Any]:
        """The run filters of ``/api/v1/runs`` (and the runs ``/api/v1/terminations`` counts)."""
        q = request.query_params
        return {
            **_filters(request),
            "status": parse_choice("status", q.get("status"), ("ok", "error")),
            "termination_reason": parse_text("termination_reason", q.get("termination_reason"), 64),
            "tool": parse_text("tool", q.get("tool")),
            "min_tokens": parse_int("min_tokens", q.get("min_tokens"), 0, 0, 10**15) or None,
            "session": parse_text("session", q.get("session")),
            "q": parse_text("q", q.get("q"), 256),
        }

    def runs_params(request: Request) -> tuple[bool, dict[str, Any]]:
        q = request.query_params
        filters = {**_filters(request), "limit": parse_int("limit", q.get("limit"), 50, 0, analytics.runs.MAX_LIMIT)}
        if parse_choice("sort", q.get("sort"), ("started_at", "tokens"), "started_at") == "tokens":
            return True, filters
        return False, {
            **run_filters(request),
            "limit": filters["limit"],
            "offset": parse_int("offset", q.get("offset"), 0, 0, 10**9),
        }

    def runs_work(con: Connection, parsed: tuple[bool, dict[str, Any]]) -> dict[str, Any]:
        by_tokens, params = parsed
        if by_tokens:
            return {"runs": analytics.top_runs_by_tokens(con, **params)}
        counted = {k: v for k, v in params.items() if k not in ("limit", "offset")}
        return {"runs": analytics.list_runs(con, **params), "total": analytics.count_runs(con, **counted)}

    def trace_id_param(request: Request) -> str:
        trace_id = request.path_params["trace_id"].lower()
        if not _HEX.match(trace_id):
            raise BadParameter("trace_id must be 32 hex characters")
        return trace_id

    def q(request: Request) -> Any:
        return request.query_params

    runs = endpoint(runs_params, runs_work)

    def run_detail_work(con: Connection, trace_id: str) -> dict[str, Any]:
        detail = analytics.trace_detail(con, trace_id)
        if not detail["spans"]:
            raise NotFound(f"no spans stored for trace {trace_id}")
        return detail

    run_detail = endpoint(trace_id_param, run_detail_work)
    tools = endpoint(
        lambda r: {
            **_filters(r),
            "tool": parse_text("tool", q(r).get("tool")),
            "by_agent": parse_choice("group_by", q(r).get("group_by"), ("agent",)) == "agent",
        },
        lambda con, p: {"tools": analytics.tool_stats(con, **p)},
    )
    overview = endpoint(_filters, lambda con, p: analytics.overview(con, **p))
    terminations = endpoint(
        lambda r: {
            **run_filters(r),
            "bucket_seconds": parse_int("bucket", q(r).get("bucket"), 0, 1, 366 * 86400) or None,
        },
        lambda con, p: analytics.terminations(con, **p),
    )
    loops = endpoint(
        lambda r: {
            **_filters(r),
            "kind": parse_choice("kind", q(r).get("kind"), LOOP_KINDS),
            "limit": parse_int("limit", q(r).get("limit"), 1000, 0, 100_000),
            "session": parse_text("session", q(r).get("session")),
        },
        lambda con, p: analytics.loops_page(con, **p),
    )
    loops_over_time = endpoint(
        lambda r: {**_filters(r), "bucket_seconds": parse_int("bucket", q(r).get("bucket"), 3600, 1, 366 * 86400)},
        lambda con, p: {"bucket_seconds": p["bucket_seconds"], "buckets": analytics.loops_over_time(con, **p)},
    )
    looping_tools = endpoint(
        lambda r: {**_filters(r), "limit": parse_int("limit", q(r).get("limit"), 10, 0, 1000)},
        lambda con, p: {"tools": analytics.top_looping_tools(con, **p)},
    )
    values = endpoint(
        lambda r: {
            **_filters(r),
            "field": parse_choice("field", q(r).get("field"), analytics.VALUE_FIELDS) or "agent",
            "limit": parse_int("limit", q(r).get("limit"), 1000, 0, 10_000),
        },
        lambda con, p: {"field": p["field"], "values": analytics.field_values(con, **p)},
    )
    stalls = endpoint(
        lambda r: {
            **_filters(r),
            "kind": parse_choice("kind", q(r).get("kind"), STALL_KINDS),
            # a trace silent longer than STUCK_MAX_AGE_SECONDS is abandoned, not stuck
            "stuck_after_seconds": parse_int(
                "stuck_after", q(r).get("stuck_after"), 300, 1, int(STUCK_MAX_AGE_SECONDS) - 1
            ),
            "limit": parse_int("limit", q(r).get("limit"), 1000, 0, 100_000),
        },
        lambda con, p: {
            "stalls": analytics.stalls(con, **p),
            "counts": analytics.stall_counts(con, **{k: v for k, v in p.items() if k != "limit"}),
        },
    )
    sessions = endpoint(
        lambda r: {
            **_filters(r),
            "session": parse_text("session", q(r).get("session")),
            "limit": parse_int("limit", q(r).get("limit"), 100, 0, analytics.SESSIONS_LIMIT),
        },
        lambda con, p: {"sessions": analytics.sessions(con, **p)},
    )
    burn = endpoint(
        lambda r: {**_filters(r), "limit": parse_int("limit", q(r).get("limit"), 100, 0, 100_000)},
        lambda con, p: analytics.burn(con, **p),
    )
    models = endpoint(_filters, lambda con, p: {"models": analytics.models(con, **p)})
    burn_curve = endpoint(
        lambda r: {**_filters(r), "max_step": parse_int("max_step", q(r).get("max_step"), 50, 0, 10_000)},
        lambda con, p: {"curve": analytics.burn_curve(con, **p)},
    )
    budgets = endpoint(
        lambda r: {
            **_filters(r),
            "by_service": parse_choice("group_by", q(r).get("group_by"), ("service",)) is not None,
        },
        lambda con, p: analytics.budgets(con, **p),
    )

    def budget_runs_params(request: Request) -> dict[str, Any]:
        kind = parse_choice("kind", q(request).get("kind"), BUDGET_KINDS)
        value = parse_number("value", q(request).get("value"), 0, 1e15)
        if kind is None or value is None:
            raise BadParameter(f"kind ({', '.join(BUDGET_KINDS)}) and value are required")
        return {
            **_filters(request),
            "kind": kind,
            "value": value,
            "only_cut": parse_choice("only_cut", q(request).get("only_cut"), ("true", "false"), "true") == "true",
            "limit": parse_int("limit", q(request).get("limit"), 100, 0, 100_000),
        }

    budget_runs = endpoint(budget_runs_params, lambda con, p: {"runs": analytics.budget_replay(con, **p)})
    alert_list = endpoint(
        lambda r: {
            "limit": parse_int("limit", q(r).get("limit"), 100, 0, 10_000),
            "rule": parse_text("rule", q(r).get("rule")),
        },
        lambda con, p: alerts.alerts_overview(con, **p),
    )

    def series_params(request: Request) -> tuple[str, datetime | None, datetime | None]:
        rule = parse_text("rule", q(request).get("rule"))
        if rule is None:
            raise BadParameter("rule is required")
        now = _utcnow()
        return (
            rule,
            *time_window(
                parse_time("since", q(request).get("since"), now), parse_time("until", q(request).get("until"), now)
            ),
        )

    alert_series = endpoint(
        series_params,
        lambda con, p: {"rule": p[0], "series": alerts.alert_series(con, p[0], since=p[1], until=p[2])},
    )

    def metric_params(request: Request) -> tuple[Any, datetime, datetime]:
        # Lets `loopsight alerts check --collector URL` measure without opening the DB file.
        params = q(request)
        metric = parse_choice("metric", params.get("metric"), alerts.METRICS)
        now = _utcnow()
        since, until = parse_time("since", params.get("since"), now), parse_time("until", params.get("until"), now)
        if metric is None or since is None or until is None or since >= until:
            raise BadParameter("metric, since and until are required, with since before until")
        since, until = cast(tuple[datetime, datetime], time_window(since, until))  # both given
        takes = alerts.rules.METRIC_KEYS[metric]
        for key in ("tool", "error_class", "reason", "stat", "stuck_after"):
            if params.get(key) is not None and key not in takes:
                raise BadParameter(
                    f"{key} does not apply to metric {metric} (its parameters: {', '.join(sorted(takes)) or 'none'})"
                )
        needed = alerts.rules.REQUIRED_KEYS.get(metric)
        if needed is not None and params.get(needed) is None:
            raise BadParameter(f"metric {metric} needs {needed}")
        spec = alerts.MetricSpec(
            metric,
            service=parse_text("service", params.get("service")),
            agent=parse_text("agent", params.get("agent")),
            tool=parse_text("tool", params.get("tool")),
            error_class=parse_choice("error_class", params.get("error_class"), alerts.rules.ERROR_CLASSES),
            reason=parse_choice("reason", params.get("reason"), alerts.rules.TERMINATION_REASONS),
            stat=parse_choice("stat", params.get("stat"), alerts.rules.STATS, "p95") or "p95",
            stuck_after_seconds=parse_int("stuck_after", params.get("stuck_after"), 300, 1, 366 * 86400),
        )
        return spec, since, until

    alert_metric = endpoint(metric_params, lambda con, p: alerts.measure(con, *p).to_dict())

    return [
        Route("/api/v1/alerts", alert_list, methods=["GET"]),
        Route("/api/v1/alerts/series", alert_series, methods=["GET"]),
        Route("/api/v1/alerts/metric", alert_metric, methods=["GET"]),
        Route("/api/v1/runs", runs, methods=["GET"]),
        Route("/api/v1/runs/{trace_id}", run_detail, methods=["GET"]),
        Route("/api/v1/tools", tools, methods=["GET"]),
        Route("/api/v1/overview", overview, methods=["GET"]),
        Route("/api/v1/terminations", terminations, methods=["GET"]),
        Route("/api/v1/loops", loops, methods=["GET"]),
        Route("/api/v1/loops/over_time", loops_over_time, methods=["GET"]),
        Route("/api/v1/loops/tools", looping_tools, methods=["GET"]),
        Route("/api/v1/values", values, methods=["GET"]),
        Route("/api/v1/stalls", stalls, methods=["GET"]),
        Route("/api/v1/sessions", sessions, methods=["GET"]),
        Route("/api/v1/burn", burn, methods=["GET"]),
        Route("/api/v1/burn/curve", burn_curve, methods=["GET"]),
        Route("/api/v1/budgets", budgets, methods=["GET"]),
        Route("/api/v1/budgets/runs", budget_runs, methods=["GET"]),
        Route("/api/v1/models", models, methods=["GET"]),
    ]
