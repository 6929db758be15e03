"""The demo scenario pack: realistic agent runs for ``loopsight demo`` and the dashboard.

Each scenario builds a fresh :class:`~loopsight.react.ReactAgent` (scripted model, real
tools that sleep, fail, time out, or return login walls and ad pages) and a task. Delays
are real seconds divided by ``speed``. :func:`plan` guarantees that a pack of at least
``len(REQUIRED)`` runs contains every termination reason, error class, loop kind and stall
kind but ``stuck`` (a slow model call, retry backoff and an idle gap, in real seconds because
the stall thresholds are absolute), and fills the rest with mostly successful runs.

Example:
    >>> names = [s.name for s in plan(40, seed=7)]
    >>> len(names), set(REQUIRED) <= set(names)
    (40, True)
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import loopsight
from loopsight.react.config import DEFAULT_SYSTEM_PROMPT, ReactConfig
from loopsight.react.context import ContextPolicy
from loopsight.react.llm.scripted import ScriptedLLM, ScriptItem, call, turn
from loopsight.react.loop import ReactAgent
from loopsight.react.retry import RetryPolicy
from loopsight.react.tools import Tool


@dataclass(frozen=True)
class Built:
    """A ready-to-run scenario: the agent, its task, and the user's patience (cancel after)."""

    agent: ReactAgent
    task: str
    patience: float | None = None


@dataclass(frozen=True)
class Scenario:
    """A named scenario: ``build(rng, speed)`` makes a fresh agent for one run."""

    name: str
    agent: str
    weight: float
    build: Callable[[random.Random, float], Built]


ORDER_ID = {"type": "string", "pattern": "^[0-9]{6}$", "description": "six-digit order id"}
ORDER_SCHEMA = {
    "type": "object",
    "required": ["order_id"],
    "properties": {"order_id": ORDER_ID},
    "additionalProperties": False,
}
SEARCH_SCHEMA = {"type": "object", "required": ["query"], "properties": {"query": {"type": "string", "minLength": 3}}}
URL_SCHEMA = {"type": "object", "required": ["url"], "properties": {"url": {"type": "string", "pattern": "^https?://"}}}
METRIC_SCHEMA = {
    "type": "object",
    "required": ["service"],
    "properties": {
        "service": {"type": "string", "enum": ["checkout", "search", "payments", "auth", "inventory", "shipping"]}
    },
}

WORDS = [
    "latency",
    "budget",
    "retrieval",
    "agent",
    "policy",
    "refund",
    "shipment",
    "customer",
    "invoice",
    "cache",
    "index",
    "model",
    "token",
    "context",
    "window",
    "warehouse",
    "carrier",
    "delay",
    "payment",
    "gateway",
    "region",
    "replica",
    "quorum",
]
LOGIN_WALL_EN = "Please sign in to continue reading. Create a free account to continue."
LOGIN_WALL_ZH = "该文章为会员专享内容，请登录后查看全文。扫码登录"
AD_PAGE = "Sponsored deals! " + " ".join(f"[Buy now](https://ads.example/deal/{i})" for i in range(12))


def _sleep(seconds: float) -> None:
    if seconds > 0:
        time.sleep(seconds)


def _article(rng: random.Random, topic: str, words: int) -> str:
    body = " ".join(rng.choice(WORDS) for _ in range(words))
    return f"{topic.title()}: {body}."


def _config(speed: float, **kw: Any) -> ReactConfig:
    """Budgets in real seconds, scaled by ``speed``."""
    kw["max_seconds"] = kw.get("max_seconds", 90.0) / speed
    kw["default_tool_timeout"] = kw.get("default_tool_timeout", 10.0) / speed
    kw.setdefault("retry", RetryPolicy(base=0.5 / speed, cap=4.0 / speed, retry_after_cap=10.0 / speed))
    return ReactConfig(**kw)


_SERVICES = {
    "checkout": ("payments-core", 300, 99.95, "cart, pricing, payments"),
    "search": ("discovery", 450, 99.9, "catalog index, ranking"),
    "payments": ("payments-core", 800, 99.99, "card processor, ledger"),
    "auth": ("identity", 150, 99.99, "sessions, tokens, MFA"),
    "inventory": ("fulfilment", 400, 99.9, "stock levels, reservations"),
    "shipping": ("fulfilment", 600, 99.5, "carriers, labels, tracking"),
}
OPS_SYSTEM_PROMPT = (
    DEFAULT_SYSTEM_PROMPT
    + "\n\nYou are the on-call operations agent. Answer from the metrics and reports the tools return; "
    "never guess a number. The runbook below is the reference for every service.\n"
    + "".join(
        f"\n## {name}\nOwner team: {team}. Depends on: {deps}. SLO: p95 latency under {p95} ms and "
        f"availability of {avail}% over 28 days. Page the owner when the error rate stays above 2% for "
        f"10 minutes or p95 doubles against the same hour last week. First checks: recent deploys of {name}, "
        f"saturation of its database pool, upstream timeouts from {deps.split(', ')[0]}, the queue depth of "
        f"its workers, and the cache hit rate of its read path. Mitigations in order: roll back the last "
        f"deploy, shed non-critical traffic with the {name} feature flags, scale the worker pool, and fail "
        f"over to the standby region. Escalate to the incident commander when a mitigation does not help "
        f"within 15 minutes, and write the timeline in the incident channel as you go. Known issues: the "
        f"{name} dashboards lag two minutes behind; a report that runs over 30 seconds means the warehouse "
        f"is busy, not that {name} is down; a metrics call that times out once should be retried, twice "
        f"means the metrics store itself is degraded.\n"
        for name, (team, p95, avail, deps) in _SERVICES.items()
        for _ in range(2)  # the long form of each section: checks, mitigations, known issues
    )
)
"""The ops agent's system prompt: a runbook long enough (about 2,500 tokens) that Anthropic's
prompt cache keeps it (2,048 tokens at least for Claude 3.5 Haiku): the first call writes it, the
next ones read it back."""


def _llm(rng: random.Random, speed: float, script: list[Any], model: str = "gpt-4o-mini") -> ScriptedLLM:
    # The provider's prompt cache is simulated as it bills (ScriptedLLM): OpenAI's automatic
    # prefix cache, Anthropic's cache breakpoint on the last message.
    provider = "anthropic" if model.startswith("claude") else "openai"
    return ScriptedLLM(script, model=model, provider=provider, latency=lambda: rng.uniform(0.6, 2.2) / speed)


# -- order assistant ---------------------------------------------------------------------
def _order_tools(
    rng: random.Random,
    speed: float,
    *,
    slow_first: int = 0,
    down: bool = False,
    forbidden: frozenset[str] = frozenset(),
    missing: frozenset[str] = frozenset(),
    refund_timeouts: int = 0,
    busy_first: int = 0,
) -> list[Tool]:
    state = {"query": 0, "refund": 0}
    refunds: dict[str, dict[str, Any]] = {}

    def query_order(order_id: str) -> dict[str, Any]:
        state["query"] += 1
        if down:
            _sleep(rng.uniform(0.2, 0.5) / speed)
            raise loopsight.TransientToolError("order service unavailable", error_type="503", retry_after=0.4 / speed)
        if state["query"] <= busy_first:
            _sleep(rng.uniform(0.02, 0.05) / speed)
            raise loopsight.TransientToolError("order service busy", error_type="503", retry_after=BACKOFF_S)
        if state["query"] <= slow_first:
            _sleep(8.0 / speed)  # stalls past its 3 s timeout
        else:
            _sleep(rng.uniform(0.1, 0.4) / speed)
        if order_id in forbidden:
            raise PermissionError(f"order {order_id} belongs to another account")
        if order_id in missing:
            raise loopsight.PermanentToolError(f"order {order_id} does not exist", error_type="not_found")
        return {"order_id": order_id, "status": "shipped", "carrier": "SF Express", "eta_days": 2}

    def track_parcel(order_id: str) -> dict[str, Any]:
        _sleep(rng.uniform(0.1, 0.5) / speed)
        return {"order_id": order_id, "last_scan": "Shenzhen hub", "status": "in transit"}

    def create_refund(order_id: str, amount: float, idempotency_key: str) -> dict[str, Any]:
        state["refund"] += 1
        _sleep(rng.uniform(0.2, 0.4) / speed)
        if state["refund"] <= refund_timeouts:
            raise TimeoutError("payment gateway timed out")
        return refunds.setdefault(
            idempotency_key, {"refund_id": f"RF-{order_id}", "amount": amount, "state": "pending"}
        )

    refund_schema = {
        "type": "object",
        "required": ["order_id", "amount"],
        "properties": {"order_id": ORDER_ID, "amount": {"type": "number", "minimum": 0}},
    }
    return [
        Tool(
            "query_order",
            query_order,
            "Look an order up by its six-digit id.",
            ORDER_SCHEMA,
            timeout=3.0 / speed,
            max_retries=2,
        ),
        Tool("track_parcel", track_parcel, "Track the parcel of an order.", ORDER_SCHEMA, timeout=3.0 / speed),
        Tool(
            "create_refund",
            create_refund,
            "Refund an order (a write: not idempotent).",
            refund_schema,
            idempotent=False,
            timeout=3.0 / speed,
            max_retries=2,
        ),
    ]


def _order_status(rng: random.Random, speed: float) -> Built:
    oid = f"{rng.randint(100000, 999999)}"
    script = [
        turn(call("query_order", order_id=oid), content="Let me look the order up."),
        turn(call("track_parcel", order_id=oid)),
        f"Order {oid} has shipped with SF Express and is in transit (last scan: Shenzhen hub).",
    ]
    return Built(
        ReactAgent(_llm(rng, speed, script), _order_tools(rng, speed), _config(speed), name="order-assistant"),
        f"Where is my order {oid}?",
    )


def _order_chinese_id(rng: random.Random, speed: float) -> Built:
    script = [
        turn(call("query_order", order_id="订单一零零二三四")),
        turn(call("query_order", order_id="100234"), content="The id must be six digits."),
        "订单 100234 已发货，预计两天送达。",
    ]
    return Built(
        ReactAgent(_llm(rng, speed, script), _order_tools(rng, speed), _config(speed), name="order-assistant"),
        "我的订单一零零二三四到哪里了？",
    )


def _order_flaky(rng: random.Random, speed: float) -> Built:
    script = [turn(call("query_order", order_id="100871")), "Order 100871 has shipped; it should arrive in 2 days."]
    tools = _order_tools(rng, speed, slow_first=1)
    return Built(
        ReactAgent(_llm(rng, speed, script), tools, _config(speed), name="order-assistant"), "Has order 100871 shipped?"
    )


def _order_refund(rng: random.Random, speed: float) -> Built:
    script = [
        turn(call("query_order", order_id="100555")),
        turn(call("create_refund", order_id="100555", amount=42.5)),
        turn(call("create_refund", order_id="100555", amount=42.5), content="Confirming the refund went through."),
        "Refund RF-100555 for 42.50 is pending.",
    ]
    tools = _order_tools(rng, speed, refund_timeouts=1)
    return Built(
        ReactAgent(_llm(rng, speed, script), tools, _config(speed), name="order-assistant"),
        "Refund order 100555, it arrived broken.",
    )


def _order_forbidden(rng: random.Random, speed: float) -> Built:
    script = [turn(call("query_order", order_id="200001")), "(never reached)"]
    tools = _order_tools(rng, speed, forbidden=frozenset({"200001"}))
    return Built(
        ReactAgent(_llm(rng, speed, script), tools, _config(speed), name="order-assistant"), "Show me order 200001."
    )


def _order_not_found(rng: random.Random, speed: float) -> Built:
    script = [turn(call("query_order", order_id="999999"))] * 3 + ["(never)"]
    tools = _order_tools(rng, speed, missing=frozenset({"999999"}))
    return Built(
        ReactAgent(_llm(rng, speed, script), tools, _config(speed), name="order-assistant"),
        "Why was my order 999999 cancelled?",
    )


def _order_oscillation(rng: random.Random, speed: float) -> Built:
    q, t = call("query_order", order_id="100777"), call("track_parcel", order_id="100777")
    script = [turn(q), turn(t), turn(q), turn(t), turn(q), turn(q), "(never)"]
    return Built(
        ReactAgent(_llm(rng, speed, script), _order_tools(rng, speed), _config(speed), name="support-triage"),
        "The tracking page and the order page disagree for 100777.",
    )


# -- stalls ------------------------------------------------------------------------------
# The stall rules have absolute thresholds (a call 2 s over its p95, 1 s of retry backoff, a 2 s
# idle gap), so these delays are real seconds, not divided by ``speed``: each run takes ~1-2.5 s,
# started first (:data:`FIRST`) so they overlap with the rest of the pack.
SLOW_MODEL_S = 2.8
RATE_LIMIT_S = 2.3
BACKOFF_S = 0.6


def _order_slow_model(rng: random.Random, speed: float) -> Built:
    oid = f"{rng.randint(100000, 999999)}"
    delays = iter([SLOW_MODEL_S])  # the first model call hangs well past the model's p95, then normal
    llm = ScriptedLLM(
        [turn(call("query_order", order_id=oid)), f"Order {oid} has shipped."],
        model="gpt-4o-mini",
        provider="openai",
        latency=lambda: next(delays, rng.uniform(0.6, 2.2) / speed),
    )
    return Built(
        ReactAgent(llm, _order_tools(rng, speed), _config(speed, max_seconds=90.0 * speed), name="order-assistant"),
        f"Where is order {oid}?",
    )


def _order_rate_limited(rng: random.Random, speed: float) -> Built:
    oid = f"{rng.randint(100000, 999999)}"
    limited = loopsight.TransientToolError(
        "rate limit reached for gpt-4o-mini", error_type="429", retry_after=RATE_LIMIT_S
    )
    script = [limited, turn(call("track_parcel", order_id=oid)), f"Order {oid} is in transit."]
    # the agent waits out the model's Retry-After outside any span: an idle gap in the run
    retry = RetryPolicy(base=0.5 / speed, cap=4.0 / speed, retry_after_cap=RATE_LIMIT_S)
    return Built(
        ReactAgent(
            _llm(rng, speed, script),
            _order_tools(rng, speed),
            _config(speed, max_seconds=90.0 * speed, retry=retry),
            name="order-assistant",
        ),
        f"Track order {oid}.",
    )


def _order_backoff(rng: random.Random, speed: float) -> Built:
    oid = f"{rng.randint(100000, 999999)}"
    script = [turn(call("query_order", order_id=oid)), f"Order {oid} has shipped."]
    retry = RetryPolicy(base=BACKOFF_S, cap=BACKOFF_S, retry_after_cap=BACKOFF_S)
    tools = _order_tools(rng, speed, busy_first=2)  # two "busy, retry after 0.6 s" answers, then the order
    return Built(
        ReactAgent(
            _llm(rng, speed, script),
            tools,
            _config(speed, max_seconds=90.0 * speed, retry=retry),
            name="order-assistant",
        ),
        f"Status of order {oid}?",
    )


def _billing_down(rng: random.Random, speed: float) -> Built:
    script = [turn(call("query_order", order_id=f"30010{i}")) for i in range(3)] + ["(never)"]
    tools = _order_tools(rng, speed, down=True)
    return Built(
        ReactAgent(_llm(rng, speed, script), tools, _config(speed), name="billing-agent"),
        "Were orders 300100, 300101 and 300102 charged twice?",
    )


# -- research agent ------------------------------------------------------------------------
def _research_tools(
    rng: random.Random,
    speed: float,
    pages: dict[str, Any] | None = None,
    results: dict[str, list[str]] | None = None,
    page_words: int = 120,
) -> list[Tool]:
    def web_search(query: str) -> dict[str, Any]:
        _sleep(rng.uniform(0.3, 0.9) / speed)
        if results is not None and query in results:
            return {"results": results[query]}
        slug = "-".join(query.lower().split()[:3])
        return {"results": [f"https://kb.example/{slug}/{i}" for i in range(3)]}

    def fetch_page(url: str) -> dict[str, Any]:
        _sleep(rng.uniform(0.2, 0.8) / speed)
        if pages is not None and url in pages:
            return {"url": url, "content": pages[url]}
        return {"url": url, "content": _article(rng, url.rsplit("/", 2)[-2], page_words)}

    return [
        Tool("web_search", web_search, "Search the web.", SEARCH_SCHEMA, timeout=5.0 / speed),
        Tool("fetch_page", fetch_page, "Fetch a page's text.", URL_SCHEMA, timeout=5.0 / speed),
    ]


def _research_happy(rng: random.Random, speed: float) -> Built:
    topic = rng.choice(["vector index compaction", "carrier delay prediction", "payment retries"])
    slug = "-".join(topic.split()[:3])
    script = [
        turn(call("web_search", query=topic)),
        turn(call("fetch_page", url=f"https://kb.example/{slug}/0")),
        f"Summary of {topic}: three sources agree on the main trade-offs.",
    ]
    return Built(
        ReactAgent(
            _llm(rng, speed, script, "gpt-4o"), _research_tools(rng, speed), _config(speed), name="research-agent"
        ),
        f"Brief me on {topic}.",
    )


def _research_walls(rng: random.Random, speed: float) -> Built:
    pages = {
        "https://news.example/a": LOGIN_WALL_EN,
        "https://zhihu.example/b": LOGIN_WALL_ZH,
        "https://deals.example/c": AD_PAGE,
        "https://404.example/d": "Not found",
        "https://wiki.example/e": _article(rng, "quorum reads", 150),
    }
    script = [
        turn(call("web_search", query="quorum read latency")),
        turn(call("fetch_page", url="https://news.example/a")),
        turn(call("fetch_page", url="https://zhihu.example/b")),
        turn(call("fetch_page", url="https://deals.example/c"), call("fetch_page", url="https://404.example/d")),
        turn(call("fetch_page", url="https://wiki.example/e")),
        "Quorum reads trade latency for consistency; the wiki page explains the replica maths.",
    ]
    return Built(
        ReactAgent(
            _llm(rng, speed, script, "gpt-4o"),
            _research_tools(rng, speed, pages),
            _config(speed),
            name="research-agent",
        ),
        "How do quorum reads affect latency?",
    )


def _research_dupes(rng: random.Random, speed: float) -> Built:
    q1, q2, q3 = "refund policy damaged items 2024", "refund policy for damaged items 2024", "warranty claim process"
    results = {q1: [], q3: ["https://kb.example/warranty/0"]}
    script = [
        turn(call("web_search", query=q1)),
        turn(call("web_search", query=q2)),
        turn(call("web_search", query=q3)),
        turn(call("fetch_page", url="https://kb.example/warranty/0")),
        "Damaged items are handled as warranty claims: file within 30 days.",
    ]
    return Built(
        ReactAgent(
            _llm(rng, speed, script, "gpt-4o"),
            _research_tools(rng, speed, results=results),
            _config(speed),
            name="research-agent",
        ),
        "What is the refund policy for damaged items?",
    )


def _long_fetches(n: int, final: str | None) -> list[Any]:
    topics = [
        "replication",
        "sharding",
        "consensus",
        "caching",
        "batching",
        "backpressure",
        "idempotency",
        "observability",
        "rate-limits",
        "failover",
        "compaction",
        "tiering",
    ]
    script: list[Any] = [turn(call("fetch_page", url=f"https://docs.example/{t}/1")) for t in topics[:n]]
    if final is not None:
        script.append(final)
    return script


def _research_long(rng: random.Random, speed: float) -> Built:
    config = _config(
        speed, max_steps=14, context=ContextPolicy(window=3000, observation_chars=4000, compact_observation_chars=1700)
    )
    script = _long_fetches(9, "The nine design docs agree: replicate, shard by tenant, batch writes.")
    return Built(
        ReactAgent(
            _llm(rng, speed, script, "gpt-4o"),
            _research_tools(rng, speed, page_words=300),
            config,
            name="research-agent",
        ),
        "Read the storage design docs and summarise them.",
    )


def _research_deep(rng: random.Random, speed: float) -> Built:
    script = _long_fetches(12, None)
    return Built(
        ReactAgent(
            _llm(rng, speed, script, "gpt-4o"),
            _research_tools(rng, speed),
            _config(speed, max_steps=6),
            name="research-agent",
        ),
        "Compare every database design doc we have.",
    )


def _research_tokens(rng: random.Random, speed: float) -> Built:
    script = _long_fetches(12, None)
    return Built(
        ReactAgent(
            _llm(rng, speed, script, "gpt-4o"),
            _research_tools(rng, speed, page_words=400),
            _config(speed, max_tokens=6000),
            name="research-agent",
        ),
        "Read all the operations runbooks.",
    )


def _research_exact(rng: random.Random, speed: float) -> Built:
    script = [turn(call("web_search", query="status page incident 4411"))] * 6
    return Built(
        ReactAgent(
            _llm(rng, speed, script, "gpt-4o"), _research_tools(rng, speed), _config(speed), name="research-agent"
        ),
        "Is incident 4411 resolved yet?",
    )


def _research_stale(rng: random.Random, speed: float) -> Built:
    # different questions, one stale answer: the same result again and again (no_progress)
    queries = ["incident 4411 status", "payments outage today", "checkout errors since 9am", "card declines eu region"]
    stale = ["https://status.example/incidents/4411?updated=2024-03-02"]
    script: list[Any] = [turn(call("web_search", query=q)) for q in queries]
    script.append("The status page still says incident 4411 is under investigation.")
    return Built(
        ReactAgent(
            _llm(rng, speed, script, "gpt-4o"),
            _research_tools(rng, speed, results=dict.fromkeys(queries, stale)),
            _config(speed),
            name="research-agent",
        ),
        "Why are card payments failing?",
    )


# -- ops agent -----------------------------------------------------------------------------
def _ops_tools(
    rng: random.Random, speed: float, *, stall_first: bool = False, report_seconds: float = 1.0
) -> list[Tool]:
    state = {"metrics": 0}

    async def get_metrics(service: str) -> dict[str, Any]:
        state["metrics"] += 1
        stall = stall_first and state["metrics"] == 1
        await asyncio.sleep((12.0 if stall else rng.uniform(0.2, 0.6)) / speed)
        return {"service": service, "p95_ms": rng.randint(80, 900), "error_rate": round(rng.random() / 20, 4)}

    def run_report(service: str) -> dict[str, Any]:
        _sleep(report_seconds / speed)
        return {"service": service, "report": "ok"}

    return [
        Tool("get_metrics", get_metrics, "Latency and errors of a service.", METRIC_SCHEMA, timeout=4.0 / speed),
        Tool(
            "run_report",
            run_report,
            "Build the weekly report for a service (slow).",
            METRIC_SCHEMA,
            timeout=60.0 / speed,
        ),
    ]


def _ops_stall(rng: random.Random, speed: float) -> Built:
    script = [turn(call("get_metrics", service="checkout")), "Checkout p95 is within its SLO."]
    return Built(
        ReactAgent(
            _llm(rng, speed, script, "claude-3-5-haiku"),
            _ops_tools(rng, speed, stall_first=True),
            _config(speed, system_prompt=OPS_SYSTEM_PROMPT),
            name="ops-agent",
        ),
        "Is checkout healthy?",
    )


def _ops_wallclock(rng: random.Random, speed: float) -> Built:
    script = [turn(call("run_report", service="payments")), "(never)"]
    return Built(
        ReactAgent(
            _llm(rng, speed, script, "claude-3-5-haiku"),
            _ops_tools(rng, speed, report_seconds=40.0),
            _config(speed, max_seconds=12.0, system_prompt=OPS_SYSTEM_PROMPT),
            name="ops-agent",
        ),
        "Build the payments weekly report.",
    )


def _ops_batch(rng: random.Random, speed: float) -> Built:
    services = ["checkout", "search", "payments", "auth", "inventory", "shipping"]
    script = [turn(*(call("get_metrics", service=s) for s in services)), "(never)"]
    return Built(
        ReactAgent(
            _llm(rng, speed, script, "claude-3-5-haiku"),
            _ops_tools(rng, speed),
            _config(speed, max_tool_calls=4, system_prompt=OPS_SYSTEM_PROMPT),
            name="ops-agent",
        ),
        "Check every service's health.",
    )


def _ops_model_error(rng: random.Random, speed: float) -> Built:
    script = [turn(call("get_metrics", service="search")), RuntimeError("model returned an unparseable completion")]
    return Built(
        ReactAgent(
            _llm(rng, speed, script, "claude-3-5-haiku"),
            _ops_tools(rng, speed),
            _config(speed, system_prompt=OPS_SYSTEM_PROMPT),
            name="ops-agent",
        ),
        "Why is search slow?",
    )


def _triage_cancelled(rng: random.Random, speed: float) -> Built:
    script: list[ScriptItem] = [
        turn(call("query_order", order_id="100999")),
        turn(call("track_parcel", order_id="100999")),
        "done",
    ]
    llm = ScriptedLLM(script, model="gpt-4o", provider="openai", latency=lambda: 4.0 / speed)
    return Built(
        ReactAgent(llm, _order_tools(rng, speed), _config(speed), name="support-triage"),
        "Customer on the phone: where is 100999?",
        patience=6.0 / speed,
    )


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in [
        Scenario("order_status", "order-assistant", 8, _order_status),
        Scenario("order_chinese_id", "order-assistant", 3, _order_chinese_id),
        Scenario("order_flaky", "order-assistant", 3, _order_flaky),
        Scenario("order_refund", "order-assistant", 2, _order_refund),
        Scenario("order_forbidden", "order-assistant", 0.5, _order_forbidden),
        Scenario("order_not_found", "order-assistant", 0.5, _order_not_found),
        Scenario("triage_oscillation", "support-triage", 0.5, _order_oscillation),
        Scenario("triage_cancelled", "support-triage", 0.3, _triage_cancelled),
        Scenario("billing_down", "billing-agent", 0.5, _billing_down),
        Scenario("research_happy", "research-agent", 7, _research_happy),
        Scenario("research_walls", "research-agent", 2, _research_walls),
        Scenario("research_dupes", "research-agent", 2, _research_dupes),
        Scenario("research_long", "research-agent", 1.5, _research_long),
        Scenario("research_deep", "research-agent", 0.5, _research_deep),
        Scenario("research_tokens", "research-agent", 0.5, _research_tokens),
        Scenario("research_exact_loop", "research-agent", 0.5, _research_exact),
        Scenario("research_stale", "research-agent", 0.5, _research_stale),
        Scenario("ops_stall", "ops-agent", 2, _ops_stall),
        Scenario("ops_wallclock", "ops-agent", 0.3, _ops_wallclock),
        Scenario("ops_batch", "ops-agent", 0.3, _ops_batch),
        Scenario("ops_model_error", "ops-agent", 0.3, _ops_model_error),
        Scenario("order_slow_model", "order-assistant", 0, _order_slow_model),
        Scenario("order_rate_limited", "order-assistant", 0, _order_rate_limited),
        Scenario("order_backoff", "order-assistant", 0, _order_backoff),
    ]
}

# A slow call, retry backoff and an idle gap for the Stalls page (real seconds: started first).
FIRST = ("order_slow_model", "order_rate_limited", "order_backoff")

# One of each of these makes every termination reason, error class, loop kind and stall kind appear
# (stuck runs come from loopsight.react.demo, which has one crashed worker per full pack).
REQUIRED = (
    *FIRST,
    "order_chinese_id",
    "order_flaky",
    "order_refund",
    "order_forbidden",
    "order_not_found",
    "triage_oscillation",
    "triage_cancelled",
    "billing_down",
    "research_walls",
    "research_dupes",
    "research_long",
    "research_deep",
    "research_tokens",
    "research_exact_loop",
    "research_stale",
    "ops_stall",
    "ops_wallclock",
    "ops_batch",
    "ops_model_error",
)


def plan(runs: int, seed: int) -> list[Scenario]:
    """``runs`` scenarios: the required ones first (as many as fit), the rest drawn by weight, shuffled."""
    if runs < 0:
        raise ValueError("runs must be >= 0")
    rng = random.Random(seed)
    chosen = [SCENARIOS[n] for n in REQUIRED[:runs]]
    pool = list(SCENARIOS.values())
    chosen += rng.choices(pool, weights=[s.weight for s in pool], k=runs - len(chosen))
    rng.shuffle(chosen)
    chosen.sort(key=lambda s: s.name not in FIRST)  # stable: the real-time stalls start first
    return chosen
