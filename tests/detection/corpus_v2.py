"""Labelled corpus for detection v2: runs written the way models really repeat themselves.

Everything here is hand-written data (``PARAPHRASES``, ``DIFFERENT_QUESTIONS``, ``KNOB_TWEAKS``,
``PAGINATION``, ``ENTITY_SWAPS``, ``SAME_RESULT``, ``EQUAL_RESULTS``, ``CLASSIC``) and a builder
(:func:`runs`) that turns it into runs of tool calls, each labelled with the loop kinds the
definitions in ``docs/detection.md`` give it (an empty set: a hard negative). The runs are
spread over four producer vocabularies (loopsight's decorators, OpenInference, Traceloop,
plain OTel GenAI), which changes the argument text the collector sees (JSON, Traceloop's
``{"args": [], "kwargs": {...}}`` wrapper, canonical JSON) and the args hash.
:func:`latency_series` builds the slow-call series (1 %, 5 %, 10 % slow shares, the issue's
20-of-278 case, 8 % at 25× the median, natural lognormal spreads), labelled per call.

The paraphrase sets are not single edits: synonyms, reorderings, added and dropped words,
questions vs keywords. Where a real rewording defeats the rules (``k8s`` for
``kubernetes``, ``read_csv`` as an identifier) it is kept: the figures should show it.

Example:
    >>> rs = runs()
    >>> sum(1 for r in rs if "semantic" in r.loops) >= 50 and sum(1 for r in rs if not r.loops) >= 50
    True
    >>> len(PARAPHRASES) >= 25 and all(3 <= len(g.phrasings) <= 5 for g in PARAPHRASES)
    True
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import dataclass, field
from typing import Any

VOCABULARIES = ("loopsight", "openinference", "traceloop", "genai")
LOOP_KINDS = ("exact", "oscillation", "repeated_error", "semantic", "no_progress")


@dataclass
class V2Call:
    """One tool call: its arguments (a dict, or a plain string for tools that take text),
    the result text the tool returned (``None``: the producer sent none), an error type."""

    tool: str
    args: dict[str, Any] | str
    result: str | None = None
    error: str | None = None
    duration_ms: float = 100.0


@dataclass
class V2Run:
    """A run: its calls in order, the loop kinds it has (ground truth) and where it came from."""

    name: str
    category: str
    calls: list[V2Call]
    loops: frozenset[str]
    vocab: str = "genai"


# --------------------------------------------------------------------------- paraphrases


@dataclass(frozen=True)
class Paraphrases:
    """Phrasings of one question to one tool (each pair is a semantic repeat)."""

    tool: str
    field: str | None  # None: the tool takes the text itself
    phrasings: tuple[str, ...]
    extra: tuple[tuple[str, Any], ...] = ()


def _p(tool: str, field: str | None, *phrasings: str, **extra: Any) -> Paraphrases:
    return Paraphrases(tool, field, phrasings, tuple(extra.items()))


PARAPHRASES: list[Paraphrases] = [
    # the examples
    _p(
        "web_search",
        "query",
        "cheap flights london to tokyo",
        "cheapest flight from london to tokyo",
        "low cost flights london tokyo",
        "budget airfare london to tokyo",
    ),
    _p(
        "docs_search",
        "q",
        "how to use the duckdb appender from python",
        "python duckdb appender usage example",
        "duckdb appender python example",
        "using the duckdb appender api with python",
    ),
    # support knowledge base
    _p(
        "kb_search",
        "question",
        "refund policy for damaged items",
        "what is the refund policy if an item arrives damaged",
        "can i get a refund for a damaged product",
        "damaged item refund rules",
    ),
    _p(
        "kb_search",
        "question",
        "reset my password",
        "how do i reset my password",
        "forgot password reset steps",
        "password reset instructions",
    ),
    _p(
        "kb_search",
        "question",
        "cancel my subscription",
        "how do i cancel my subscription",
        "stop my monthly subscription",
        "cancel subscription plan",
    ),
    _p(
        "kb_search",
        "question",
        "change delivery address after ordering",
        "update the shipping address on my order",
        "can i change the delivery address for my order",
        "modify delivery address of an order",
    ),
    _p(
        "kb_search",
        "question",
        "gift card balance",
        "check my gift card balance",
        "how much is left on my gift card",
        "remaining balance on gift card",
    ),
    _p(
        "kb_search", "question", "track my order", "where is my order", "order tracking", "check the status of my order"
    ),
    _p(
        "hr_policy",
        "question",
        "how many vacation days do i get",
        "annual vacation day allowance",
        "number of vacation days per year",
        "how many days of vacation do employees get",
    ),
    # web search
    _p(
        "web_search",
        "query",
        "weather in paris tomorrow",
        "paris weather forecast for tomorrow",
        "tomorrow's weather forecast paris",
        "what will the weather be in paris tomorrow",
    ),
    _p(
        "web_search",
        "query",
        "best noise cancelling headphones",
        "top rated noise cancelling headphones",
        "which noise cancelling headphones are best",
        "noise cancelling headphones recommendations",
    ),
    _p(
        "web_search",
        "query",
        "symptoms of vitamin d deficiency",
        "signs of low vitamin d",
        "vitamin d deficiency symptoms",
        "how do i know if i am low on vitamin d",
    ),
    _p(
        "web_search",
        "query",
        "how long to boil an egg",
        "egg boiling time",
        "how many minutes to boil eggs",
        "boiled egg cooking time",
    ),
    _p(
        "web_search",
        "query",
        "italian restaurants near me",
        "nearby italian restaurants",
        "italian food close to me",
        "where can i eat italian food nearby",
    ),
    _p(
        "web_search",
        "query",
        "how to repot a monstera",
        "repotting a monstera plant",
        "monstera repotting guide",
        "when and how to repot a monstera",
    ),
    _p(
        "web_search",
        "query",
        "marathon training plan for beginners",
        "beginner marathon training schedule",
        "first marathon training plan",
        "how to train for a marathon as a beginner",
    ),
    _p(
        "web_search",
        "query",
        "electric bike battery range",
        "how far can an electric bike go on one charge",
        "e-bike range per charge",
        "electric bike battery distance",
    ),
    _p(
        "web_search",
        "query",
        "solar panel installation cost",
        "how much does it cost to install solar panels",
        "price of installing solar panels",
        "solar panels installation price",
    ),
    _p(
        "web_search",
        "query",
        "learn spanish verb conjugation",
        "spanish verb conjugation practice",
        "how to conjugate spanish verbs",
        "spanish conjugation rules",
    ),
    _p(
        "web_search",
        "query",
        "hotels in Barcelona near the beach",
        "beachfront hotels in Barcelona",
        "Barcelona hotels close to the beach",
        "beach hotels Barcelona",
    ),
    _p(
        "web_search",
        None,
        "laptop overheating while charging",
        "laptop gets hot when charging",
        "overheating laptop during charging",
        "why does my laptop overheat when plugged in",
    ),
    # developer docs and code
    _p(
        "docs_search",
        "q",
        "kubernetes pod stuck in pending",
        "k8s pod pending state",
        "why is my kubernetes pod pending",
        "kubernetes pod remains pending fix",
    ),
    _p(
        "docs_search",
        "q",
        "git undo last commit",
        "how to revert the last commit in git",
        "undo most recent git commit",
        "git remove last commit but keep changes",
    ),
    _p(
        "docs_search",
        "q",
        "postgres connection refused error",
        "fix postgres connection refused",
        "postgresql refusing connections",
        "cannot connect to postgres connection refused",
    ),
    _p(
        "docs_search",
        "q",
        "rust borrow checker lifetime error",
        "fix lifetime errors from the rust borrow checker",
        "rust value does not live long enough borrow checker",
        "borrow checker complains about lifetimes in rust",
    ),
    _p(
        "docs_search",
        "q",
        "increase docker container memory limit",
        "docker set memory limit for a container",
        "how to give a docker container more memory",
        "raise memory limit docker container",
    ),
    _p(
        "code_search",
        "query",
        "sort list descending python",
        "python sort a list in reverse order",
        "sort list from largest to smallest in python",
        "python descending sort of a list",
    ),
    _p(
        "code_search",
        "query",
        "python read csv into dataframe",
        "load a csv file with pandas",
        "pandas read_csv example",
        "how to read a csv file into a pandas dataframe",
    ),
    # product search and business questions
    _p(
        "product_search",
        "query",
        "running shoes for flat feet",
        "best running shoes for flat feet",
        "flat feet running shoe recommendations",
        "shoes for runners with flat feet",
        category="sports",
    ),
    _p(
        "ask_db",
        "question",
        "total sales by region last month",
        "sum of sales per region for last month",
        "last month's sales broken down by region",
        "what were the sales in each region last month",
    ),
    _p(
        "email_search",
        "query",
        "emails from the legal team about the contract",
        "contract emails from legal",
        "messages from legal regarding the contract",
    ),
    _p(
        "kb_search",
        "question",
        "status of order ORD-1042",
        "where is order ORD-1042",
        "ORD-1042 order status",
        "track order ORD-1042",
    ),
]

# Runs of different questions to one tool, most of them one word apart: not loops.
DIFFERENT_QUESTIONS: list[tuple[str, str | None, tuple[str, ...]]] = [
    (
        "docs_search",
        "q",
        ("duckdb appender python", "duckdb parquet export", "duckdb window functions", "duckdb json extension"),
    ),
    ("code_search", "query", ("python read csv file", "python write csv file", "python csv custom delimiter")),
    (
        "kb_search",
        "question",
        ("cancel my subscription", "upgrade my subscription", "pause my subscription", "downgrade my subscription"),
    ),
    ("web_search", "query", ("weather forecast paris", "weather forecast oslo", "weather forecast berlin")),
    (
        "web_search",
        "query",
        ("cheap flights london to tokyo", "cheap flights london to sydney", "cheap flights london to new york"),
    ),
    (
        "web_search",
        "query",
        ("symptoms of vitamin d deficiency", "symptoms of iron deficiency", "symptoms of vitamin b12 deficiency"),
    ),
    ("web_search", "query", ("convert 100 usd to eur", "convert 100 usd to gbp", "convert 100 usd to jpy")),
    (
        "web_search",
        "query",
        ("italian restaurants near me", "chinese restaurants near me", "mexican restaurants near me"),
    ),
    ("docs_search", "q", ("install numpy on windows", "install numpy on macos", "install numpy on linux")),
    (
        "web_search",
        "query",
        ("hotels in Barcelona near the beach", "hotels in Lisbon near the beach", "hotels in Nice near the beach"),
    ),
    (
        "docs_search",
        "q",
        ("git undo last commit", "git squash last three commits", "git rename a branch", "git delete remote branch"),
    ),
    (
        "kb_search",
        "question",
        (
            "refund policy for damaged items",
            "shipping policy for international orders",
            "warranty policy for electronics",
            "return policy for sale items",
        ),
    ),
    (
        "github_search",
        "query",
        ("list open issues in the repo", "list closed issues in the repo", "list open pull requests in the repo"),
    ),
    (
        "web_search",
        "query",
        (
            "refund policy damaged items paris",
            "refund policy damaged items berlin",
            "refund policy damaged items madrid",
        ),
    ),
    (
        "ask_db",
        "question",
        ("total sales by region last month", "total returns by region last month", "total sales by product last month"),
    ),
    ("web_search", "query", ("python duckdb appender", "python sqlite appender", "python postgres appender")),
    ("product_search", "query", ("red running shoes", "blue running shoes", "black running shoes")),
    (
        "web_search",
        None,
        (
            "how to learn guitar",
            "best beginner guitar brands",
            "guitar chord chart for beginners",
            "how to tune a guitar by ear",
        ),
    ),
    ("kb_search", "question", ("order ORD-1 status", "order ORD-2 status", "order ORD-3 status")),
    ("web_search", "query", ("stock price of AAPL", "stock price of MSFT", "stock price of NVDA")),
    ("web_search", "query", ("John Smith phone number", "Mary Jones phone number", "Ali Khan phone number")),
    ("web_search", "query", ("weather in paris today", "weather in paris tomorrow", "weather in paris this weekend")),
]

# --------------------------------------------------------------------------- structured arguments

# (tool, argument sets in call order, kinds): one knob changes (or appears), the rest stays.
KNOB_TWEAKS: list[tuple[str, list[dict[str, Any]]]] = [
    ("search_orders", [{"q": "orders", "limit": 10}, {"q": "orders", "limit": 11}, {"q": "orders", "limit": 12}]),
    (
        "vector_search",
        [
            {"query": "refund policy damaged items", "top_k": 5},
            {"query": "refund policy damaged items", "top_k": 8},
            {"query": "refund policy damaged items", "top_k": 12},
        ],
    ),
    (
        "web_search",
        [
            {"query": "duckdb release notes", "max_results": 10},
            {"query": "duckdb release notes", "max_results": 20},
            {"query": "duckdb release notes", "max_results": 50},
        ],
    ),
    (
        "generate_summary",
        [
            {"prompt": "summarise the quarterly report", "temperature": 0.2},
            {"prompt": "summarise the quarterly report", "temperature": 0.7},
            {"prompt": "summarise the quarterly report", "temperature": 1.0},
        ],
    ),
    (
        "kb_search",
        [
            {"question": "warranty for espresso machines", "threshold": 0.8},
            {"question": "warranty for espresso machines", "threshold": 0.6},
            {"question": "warranty for espresso machines", "threshold": 0.4},
        ],
    ),
    (
        "list_products",
        [
            {"category": "shoes", "sort": "price_asc"},
            {"category": "shoes", "sort": "price_desc"},
            {"category": "shoes", "sort": "rating"},
        ],
    ),
    (
        "search_tickets",
        [
            {"query": "login failures", "order": "asc"},
            {"query": "login failures", "order": "desc"},
            {"query": "login failures", "order": "desc", "limit": 50},
        ],
    ),
    (
        "list_orders",
        [
            {"customer": "cust-77", "limit": 20},
            {"customer": "cust-77", "limit": 50},
            {"customer": "cust-77", "limit": 100, "include_archived": True},
        ],
    ),
    (
        "doc_search",
        [
            {"query": "rate limits", "mode": "keyword"},
            {"query": "rate limits", "mode": "semantic"},
            {"query": "rate limits", "mode": "hybrid"},
        ],
    ),
    (
        "code_search",
        [
            {"pattern": "retry backoff", "fuzzy": False},
            {"pattern": "retry backoff", "fuzzy": True},
            {"pattern": "retry backoff", "fuzzy": True, "max_results": 100},
        ],
    ),
    (
        "places_search",
        [
            {"query": "coffee", "location": "Paris", "radius": 500},
            {"query": "coffee", "location": "Paris", "radius": 1000},
            {"query": "coffee", "location": "Paris", "radius": 2000},
        ],
    ),
    ("get_forecast", [{"city": "Oslo", "days": 3}, {"city": "Oslo", "days": 5}, {"city": "Oslo", "days": 7}]),
    (
        "vector_search",
        [
            {"query": "onboarding checklist", "k": 3},
            {"query": "onboarding checklist", "k": 10},
            {"query": "onboarding checklist", "k": 25},
        ],
    ),
    (
        "search_logs",
        [
            {"query": "timeout", "service": "checkout", "time_range": "1h"},
            {"query": "timeout", "service": "checkout", "time_range": "6h"},
            {"query": "timeout", "service": "checkout", "time_range": "24h"},
        ],
    ),
    (
        "web_search",
        [
            {"query": "cheap flights london to tokyo", "max_results": 10},
            {"query": "cheapest flight from london to tokyo", "max_results": 20},
            {"query": "low cost flights london tokyo", "max_results": 30},
        ],
    ),
    (
        "vector_search",
        [
            {"query": "how to use the duckdb appender from python", "top_k": 5},
            {"query": "python duckdb appender usage example", "top_k": 8},
            {"query": "duckdb appender python example", "top_k": 10},
        ],
    ),
    (
        "search_api",
        [
            {"filter": {"status": "active", "region": "eu"}, "page_size": 25},
            {"filter": {"status": "active", "region": "eu"}, "page_size": 50},
            {"filter": {"status": "active", "region": "eu"}, "page_size": 100},
        ],
    ),
    (
        "llm_extract",
        [
            {"instruction": "extract the invoice total", "max_tokens": 256},
            {"instruction": "extract the invoice total", "max_tokens": 512},
            {"instruction": "extract the invoice total", "max_tokens": 1024},
        ],
    ),
]

# (tool, argument sets): pagination that advances — progress, never a loop.
PAGINATION: list[tuple[str, list[dict[str, Any]]]] = [
    ("list_orders", [{"customer": "cust-77", "page": p} for p in range(1, 5)]),
    ("web_search", [{"query": "refund policy damaged items", "offset": o, "limit": 20} for o in (0, 20, 40, 60)]),
    (
        "search_docs",
        [{"query": "kubernetes ingress"}]
        + [
            {"query": "kubernetes ingress", "cursor": c}
            for c in ("eyJvZmZzZXQiOjIwfQ", "eyJvZmZzZXQiOjQwfQ", "eyJvZmZzZXQiOjYwfQ")
        ],
    ),
    (
        "list_files",
        [{"folder": "/reports"}]
        + [{"folder": "/reports", "page_token": t} for t in ("tok_9f2a", "tok_b71c", "tok_0d3e")],
    ),
    ("es_search", [{"q": "error budget", "from": f, "size": 10} for f in (0, 10, 20, 30)]),
    ("list_users", [{"team": "platform", "skip": s, "take": 50} for s in (0, 50, 100)]),
    ("github_issues", [{"repo": "acme/web", "state": "open", "per_page": 100, "page": p} for p in (1, 2, 3)]),
    (
        "graphql_query",
        [{"first": 50}] + [{"first": 50, "after": a} for a in ("Y3Vyc29yOjUw", "Y3Vyc29yOjEwMA", "Y3Vyc29yOjE1MA")],
    ),
    ("read_file", [{"path": "logs/app.log", "start_line": s} for s in (1, 201, 401)]),
    (
        "stripe_list",
        [{"limit": 100}] + [{"limit": 100, "starting_after": x} for x in ("ch_1Nq2", "ch_1Nr7", "ch_1Ns0")],
    ),
    ("list_messages", [{"channel": "C042", "next_page": n} for n in ("dGVhbTpDMDQy", "dGVhbTpDMDQz", "dGVhbTpDMDQ0")]),
    ("kb_lookup", [{"topic": "refund policy for damaged items", "section": s} for s in (1, 2, 3, 4)]),
]

# Same page thrice (an exact loop): (tool, args).
SAME_PAGE: list[tuple[str, dict[str, Any]]] = [
    ("list_orders", {"customer": "cust-77", "page": 2}),
    ("web_search", {"query": "refund policy damaged items", "offset": 20, "limit": 20}),
    ("search_docs", {"query": "kubernetes ingress", "cursor": "eyJvZmZzZXQiOjIwfQ"}),
    ("list_files", {"folder": "/reports", "page_token": "tok_9f2a"}),
]

# (tool, argument sets): a different entity each call — different questions.
ENTITY_SWAPS: list[tuple[str, list[dict[str, Any]]]] = [
    ("get_weather", [{"city": c} for c in ("Paris", "Oslo", "Berlin")]),
    ("get_weather", [{"city": c, "days": 3} for c in ("paris", "oslo", "berlin")]),
    ("query_order", [{"order_id": o} for o in ("ORD-1", "ORD-2", "ORD-3")]),
    ("get_profile", [{"name": n} for n in ("John Smith", "Mary Jones", "Ali Khan")]),
    ("product_info", [{"sku": s} for s in ("SKU-4821", "SKU-4822", "SKU-5000")]),
    ("calendar_events", [{"date": d} for d in ("2024-05-01", "2024-05-02", "2024-05-03")]),
    ("stock_price", [{"symbol": s} for s in ("AAPL", "MSFT", "GOOG")]),
    ("convert_currency", [{"amount": 100, "from": "USD", "to": t} for t in ("EUR", "GBP", "JPY")]),
    ("flight_search", [{"origin": "LHR", "destination": d, "date": "2024-06-01"} for d in ("NRT", "SYD", "JFK")]),
    ("read_file", [{"path": p} for p in ("src/app.py", "src/db.py", "src/api.py")]),
    ("github_issue", [{"repo": "acme/web", "issue": n} for n in (123, 124, 125)]),
    ("translate", [{"text": "good morning", "target": t} for t in ("es", "de", "fr")]),
    ("search_restaurants", [{"q": "restaurants", "city": c} for c in ("paris", "oslo", "rome")]),
    ("lookup_contact", [{"email": e} for e in ("ann@example.com", "bob@example.com", "carl@example.com")]),
    ("get_user", [{"user_id": u} for u in (4821, 4822, 4823)]),
    ("calculator", [{"a": 2, "b": 3}, {"a": 2, "b": 4}, {"a": 5, "b": 7}]),
    ("list_prs", [{"repo": "acme/web", "status": s} for s in ("open", "closed", "merged")]),
    ("get_invoice", [{"customer": {"id": "C-77"}, "month": m} for m in ("2024-01", "2024-02", "2024-03")]),
    (
        "geocode",
        [{"address": a} for a in ("12 Main St, Springfield", "48 Oak Ave, Springfield", "7 Elm Rd, Shelbyville")],
    ),
    ("dictionary", [{"word": w} for w in ("serendipity", "ephemeral", "ubiquitous")]),
]

# --------------------------------------------------------------------------- results

LOGIN_WALL = (
    "<html><h1>Sign in to continue</h1><p>Create a free account or log in to read the rest of this article.</p></html>"
)
ORDER_MISSING = (
    "We could not find an order with that number. Please check the number on your confirmation email and try again."
)
STALE_PAGE = json.dumps(
    [
        {
            "title": "Refund policy (2019 archive)",
            "url": "https://shop.example/legacy/refunds",
            "snippet": "Items damaged in transit may be returned within 14 days.",
        }
    ]
)
SALES_TABLE = json.dumps({"columns": ["region", "sales"], "rows": [["north", 1200], ["south", 900], ["east", 1500]]})
FORECAST = json.dumps(
    {
        "city": "Oslo",
        "forecast": [
            {"day": "mon", "high": 4, "low": -2, "sky": "snow"},
            {"day": "tue", "high": 3, "low": -4, "sky": "cloudy"},
        ],
    }
)
CODE_HITS = "3 matches in src/utils/retry.py: def backoff(attempt), def jitter(delay), RETRY_LIMIT = 5"

# (tool, argument sets, the same result each time, kinds): the arguments vary, the answer does not.
SAME_RESULT: list[tuple[str, list[dict[str, Any]], str, frozenset[str]]] = [
    (
        "web_search",
        [{"query": q} for q in ("refund policy damaged items", "shipping times to canada", "gift card balance check")],
        STALE_PAGE,
        frozenset({"no_progress"}),
    ),
    (
        "fetch_page",
        [
            {"url": u}
            for u in ("https://news.example/a/1", "https://news.example/a/1?amp=1", "https://m.news.example/a/1")
        ],
        LOGIN_WALL,
        frozenset({"no_progress"}),
    ),
    (
        "list_orders",
        [{"customer": "cust-77", "page": p} for p in (1, 2, 3, 4)],
        json.dumps([{"id": "A-100", "total": 40.5}, {"id": "A-101", "total": 12.0}, {"id": "A-102", "total": 99.9}]),
        frozenset({"no_progress"}),
    ),
    ("query_order", [{"order_id": o} for o in ("A-1042", "A1042", "1042")], ORDER_MISSING, frozenset({"no_progress"})),
    (
        "ask_db",
        [{"question": q} for q in ("sales by region", "top customers this year", "returns by product")],
        SALES_TABLE,
        frozenset({"no_progress"}),
    ),
    (
        "code_search",
        [{"pattern": p} for p in ("backoff", "jitter", "RETRY_LIMIT", "def retry")],
        CODE_HITS,
        frozenset({"no_progress"}),
    ),
    (
        "run_tests",
        [{"args": a} for a in ("-k login", "tests/test_api.py", "-x tests/test_api.py::test_login")],
        "FAILED tests/test_api.py::test_login - AssertionError: expected status 200, got 500 (1 failed, 41 passed)",
        frozenset({"no_progress"}),
    ),
    (
        "run_python",
        [
            {"code": c}
            for c in ("import duckdb", "import duckdb as db\nprint(db.__version__)", "from duckdb import connect")
        ],
        "Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\nModuleNotFoundError: No module named 'duckdb'",
        frozenset({"no_progress"}),
    ),
    (
        "search_flights",
        [{"origin": "LHR", "destination": "NRT", "date": d} for d in ("2024-06-01", "2024-06-02", "2024-06-03")],
        "No flights found for the selected dates. Try different dates or nearby airports.",
        frozenset({"no_progress"}),
    ),
    (
        "wiki_page",
        [{"title": t} for t in ("Mercury", "Mercury (element)", "Mercury planet")],
        "Mercury may refer to: Mercury (planet), the closest planet to the Sun; Mercury (element), a chemical element; "
        "Mercury (mythology), a Roman god.",
        frozenset({"no_progress"}),
    ),
    # knob tweaks that change nothing in the answer: both a semantic repeat and no progress
    (
        "get_forecast",
        [{"city": "Oslo", "days": d} for d in (3, 5, 7)],
        FORECAST,
        frozenset({"semantic", "no_progress"}),
    ),
    (
        "kb_search",
        [
            {"question": q}
            for q in (
                "refund policy for damaged items",
                "what is the refund policy if an item arrives damaged",
                "damaged item refund rules",
            )
        ],
        STALE_PAGE,
        frozenset({"semantic", "no_progress"}),
    ),
]

# (tool, argument sets, results): equal or generic answers that are legitimate — not loops.
EQUAL_RESULTS: list[tuple[str, list[dict[str, Any]], list[str]]] = [
    ("attach_file", [{"path": p} for p in ("a.pdf", "b.pdf", "c.pdf")], ["true"] * 3),
    ("attach_file", [{"file": f} for f in ("report", "invoice", "contract")], ["File attached successfully."] * 3),
    ("attach_file", [{"path": p} for p in ("a.txt", "b.txt", "c.txt", "d.txt")], ['{"status": "ok"}'] * 4),
    (
        "send_email",
        [{"to": t, "body": "see you at 3"} for t in ("ann@example.com", "bob@example.com", "cy@example.com")],
        ['{"status": "sent"}'] * 3,
    ),
    (
        "log_note",
        [
            {"text": t}
            for t in ("call the supplier about the delay", "customer prefers email", "escalate if no reply by friday")
        ],
        ["Note saved."] * 3,
    ),
    ("web_search", [{"query": q} for q in ("zqxj flights", "qqzz hotel", "xxyq tours")], ["No results found."] * 3),
    ("set_reminder", [{"at": t, "text": "standup"} for t in ("09:00", "13:00", "17:00")], ["Reminder set."] * 3),
    ("update_record", [{"id": i, "status": "done"} for i in (1, 2, 3)], ['{"updated": 1}'] * 3),
    ("add_to_cart", [{"sku": s} for s in ("SKU-1", "SKU-2", "SKU-3")], ['{"ok": true, "cart": "updated"}'] * 3),
    (
        "upload",
        [{"path": p} for p in ("q1.xlsx", "q2.xlsx", "q3.xlsx")],
        ["The file has been uploaded to your workspace."] * 3,
    ),
    (
        "create_ticket",
        [{"title": t} for t in ("printer on floor 3 is jammed", "vpn drops every hour", "new laptop for ana")],
        ["Your request has been received and a confirmation has been sent to your inbox."] * 3,
    ),
    ("delete_branch", [{"repo": "acme/web", "branch": b} for b in ("fix-1", "fix-2", "feat-x")], ["Deleted."] * 3),
]


# Classic kinds with realistic arguments, and their hard negatives: (name, calls, kinds).
def _classic() -> list[tuple[str, list[V2Call], frozenset[str]]]:
    q = {"query": "refund policy damaged items"}
    u = {"url": "https://shop.example/help/refunds"}
    out = [
        ("exact-search", [V2Call("web_search", q), V2Call("web_search", q), V2Call("web_search", q)], {"exact"}),
        (
            "exact-interleaved",
            [
                V2Call("fetch_page", u),
                V2Call("calculator", {"expression": "19.99 * 3"}),
                V2Call("fetch_page", u),
                V2Call("fetch_page", u),
            ],
            {"exact"},
        ),
        ("exact-knob-equal", [V2Call("vector_search", {"query": "onboarding", "top_k": 5})] * 4, {"exact"}),
        ("oscillation-2", [V2Call("web_search", q), V2Call("fetch_page", u)] * 2, {"oscillation"}),
        (
            "oscillation-3",
            [V2Call("web_search", q), V2Call("fetch_page", u), V2Call("kb_search", {"question": "refund window"})] * 2,
            {"oscillation"},
        ),
        (
            "repeated-error",
            [V2Call("query_order", {"order_id": f"ORD-{n}"}, error="NotFound") for n in (7, 8, 9)],
            {"repeated_error"},
        ),
        (
            "repeated-error-paged",
            [V2Call("list_orders", {"customer": "cust-9", "page": p}, error="403") for p in (1, 2, 3)],
            {"repeated_error"},
        ),
        # hard negatives
        ("single-retry", [V2Call("web_search", q, error="timeout"), V2Call("web_search", q)], set()),
        (
            "two-failures-then-ok",
            [V2Call("query_order", {"order_id": f"ORD-{n}"}, error="NotFound") for n in (1, 2)]
            + [V2Call("query_order", {"order_id": "ORD-3"})],
            set(),
        ),
        (
            "different-errors",
            [
                V2Call("fetch_page", {"url": f"https://shop.example/{p}"}, error=e)
                for p, e in (("a", "404"), ("b", "timeout"), ("c", "403"))
            ],
            set(),
        ),
        (
            "varied-tools",
            [
                V2Call("web_search", q),
                V2Call("fetch_page", u),
                V2Call("calculator", {"expression": "12 * 4"}),
                V2Call("kb_search", {"question": "refund window for sale items"}),
            ],
            set(),
        ),
    ]
    return [(n, c, frozenset(k)) for n, c, k in out]


CLASSIC = _classic()

# --------------------------------------------------------------------------- held-out part

# Written after the rules and thresholds were frozen on the part above (and on the research
# report's pairs) and scored once: `runs(part="holdout")`. Nothing below was tuned on.
HOLDOUT_PARAPHRASES: list[Paraphrases] = [
    _p(
        "web_search",
        "query",
        "how to remove red wine stains from carpet",
        "get red wine out of a carpet",
        "red wine carpet stain removal",
        "clean spilled red wine from rug",
    ),
    _p(
        "kb_search",
        "question",
        "how do i add a user to my team",
        "add a new team member",
        "invite someone to my team",
        "how to add people to the team workspace",
    ),
    _p(
        "docs_search",
        "q",
        "python virtual environment setup",
        "how to create a venv in python",
        "set up a python virtualenv",
        "create python virtual environment",
    ),
    _p(
        "web_search",
        "query",
        "best time to visit japan",
        "when is the best season to travel to japan",
        "ideal time of year for a trip to japan",
    ),
    _p(
        "kb_search",
        "question",
        "why was my card declined",
        "payment card declined reason",
        "my card keeps getting declined",
        "card payment was rejected why",
    ),
    _p(
        "docs_search",
        "q",
        "nginx reverse proxy configuration",
        "configure nginx as a reverse proxy",
        "nginx proxy_pass setup example",
        "set up reverse proxy with nginx",
    ),
    _p(
        "web_search",
        "query",
        "how to lower cholesterol naturally",
        "natural ways to reduce cholesterol",
        "reduce cholesterol without medication",
        "foods that lower cholesterol",
    ),
    _p(
        "code_search",
        "query",
        "merge two dictionaries python",
        "python combine two dicts",
        "how to merge dicts in python",
        "join two dictionaries in python",
    ),
    _p(
        "product_search",
        "query",
        "waterproof hiking boots for women",
        "women's waterproof hiking boots",
        "hiking boots women waterproof",
        "ladies waterproof trekking boots",
    ),
    _p(
        "kb_search",
        "question",
        "how to export my data",
        "download all my account data",
        "export account data",
        "get a copy of my data",
    ),
    _p(
        "web_search",
        None,
        "symptoms of burnout at work",
        "signs of job burnout",
        "how to tell if i am burned out at work",
        "work burnout symptoms",
    ),
    _p(
        "ask_db",
        "question",
        "number of new customers per month",
        "monthly count of new customers",
        "how many customers signed up each month",
        "new customer signups by month",
    ),
    _p(
        "docs_search",
        "q",
        "react useeffect runs twice",
        "why does useeffect run two times in react",
        "useeffect called twice strict mode",
        "react effect firing twice",
    ),
    _p(
        "web_search",
        "query",
        "cheap hotels in Rome city centre",
        "budget hotels central Rome",
        "affordable hotels in the centre of Rome",
        "inexpensive Rome city center hotels",
    ),
]
HOLDOUT_DIFFERENT_QUESTIONS: list[tuple[str, str | None, tuple[str, ...]]] = [
    (
        "web_search",
        "query",
        ("how to remove red wine stains", "how to remove coffee stains", "how to remove ink stains"),
    ),
    (
        "docs_search",
        "q",
        (
            "nginx reverse proxy configuration",
            "nginx rate limiting configuration",
            "nginx gzip compression configuration",
        ),
    ),
    (
        "code_search",
        "query",
        ("merge two dictionaries python", "merge two lists python", "merge two dataframes pandas"),
    ),
    (
        "kb_search",
        "question",
        ("how do i add a user to my team", "how do i remove a user from my team", "how do i rename my team"),
    ),
    ("web_search", "query", ("best time to visit japan", "best time to visit peru", "best time to visit iceland")),
    (
        "ask_db",
        "question",
        ("number of new customers per month", "number of churned customers per month", "number of orders per month"),
    ),
    (
        "web_search",
        "query",
        ("flights from Madrid to Rome", "flights from Madrid to Athens", "flights from Madrid to Vienna"),
    ),
    ("product_search", "query", ("hiking boots size 38", "hiking boots size 41", "hiking boots size 44")),
    ("web_search", "query", ("python 3.12 release notes", "python 3.13 release notes", "python 3.11 release notes")),
    ("kb_search", "question", ("how to export my data", "how to import my data", "how to delete my data")),
]
HOLDOUT_KNOB_TWEAKS: list[tuple[str, list[dict[str, Any]]]] = [
    (
        "search_products",
        [
            {"query": "hiking boots", "limit": 24},
            {"query": "hiking boots", "limit": 48},
            {"query": "hiking boots", "limit": 96},
        ],
    ),
    (
        "rag_retrieve",
        [
            {"question": "parental leave policy", "top_k": 3, "min_score": 0.75},
            {"question": "parental leave policy", "top_k": 6, "min_score": 0.75},
            {"question": "parental leave policy", "top_k": 6, "min_score": 0.5},
        ],
    ),
    (
        "news_search",
        [
            {"q": "chip export rules", "sort_by": "relevancy"},
            {"q": "chip export rules", "sort_by": "publishedAt"},
            {"q": "chip export rules", "sort_by": "popularity"},
        ],
    ),
    (
        "complete",
        [
            {"prompt": "write a haiku about autumn", "temperature": 0.3, "max_tokens": 60},
            {"prompt": "write a haiku about autumn", "temperature": 0.9, "max_tokens": 60},
            {"prompt": "write a haiku about autumn", "temperature": 1.2, "max_tokens": 80},
        ],
    ),
    (
        "list_invoices",
        [
            {"customer_id": "C-88", "status": "unpaid", "per_page": 10},
            {"customer_id": "C-88", "status": "unpaid", "per_page": 50},
            {"customer_id": "C-88", "status": "unpaid", "per_page": 100, "verbose": True},
        ],
    ),
    (
        "semantic_search",
        [
            {"text": "how to rotate api keys", "k": 5, "rerank": False},
            {"text": "how do i rotate my api keys", "k": 10, "rerank": False},
            {"text": "rotating api keys", "k": 10, "rerank": True},
        ],
    ),
]
HOLDOUT_PAGINATION: list[tuple[str, list[dict[str, Any]]]] = [
    ("list_invoices", [{"customer_id": "C-88", "page": p, "per_page": 50} for p in (1, 2, 3)]),
    ("news_search", [{"q": "chip export rules", "offset": o} for o in (0, 10, 20, 30)]),
    (
        "drive_list",
        [{"folder_id": "F-1"}] + [{"folder_id": "F-1", "pageToken": t} for t in ("CgsI2f", "CgsI8k", "CgsJ1a")],
    ),
    ("db_scan", [{"table": "events", "start_key": k, "limit": 500} for k in ("evt_0001", "evt_0501", "evt_1001")]),
]
HOLDOUT_ENTITY_SWAPS: list[tuple[str, list[dict[str, Any]]]] = [
    ("get_weather", [{"location": c, "units": "metric"} for c in ("Madrid", "Rome", "Athens")]),
    ("get_ticket", [{"ticket_id": t} for t in ("T-5512", "T-5513", "T-5519")]),
    ("exchange_rate", [{"base": "EUR", "quote": q} for q in ("USD", "CHF", "SEK")]),
    ("user_lookup", [{"username": u} for u in ("jdoe", "asmith", "mlopez")]),
    ("read_file", [{"path": p, "encoding": "utf-8"} for p in ("docs/intro.md", "docs/setup.md", "docs/faq.md")]),
    ("get_repo", [{"owner": "acme", "repo": r} for r in ("web", "api", "infra")]),
]
HOLDOUT_SAME_RESULT: list[tuple[str, list[dict[str, Any]], str, frozenset[str]]] = [
    (
        "search_docs",
        [{"q": q} for q in ("sso setup", "configure saml", "okta integration")],
        json.dumps([{"title": "Single sign-on (beta)", "url": "https://docs.example/sso", "updated": "2021-03-02"}]),
        frozenset({"no_progress"}),
    ),
    (
        "run_shell",
        [{"cmd": c} for c in ("npm test", "npm run test -- --watch=false", "npx jest")],
        "Error: Cannot find module 'jest-environment-jsdom'\nRequire stack:\n- node_modules/jest-config/build/index.js",
        frozenset({"no_progress"}),
    ),
    (
        "get_order",
        [{"order_id": o} for o in ("ORD-77", "ord-77", "77")],
        json.dumps({"order": "ORD-71", "status": "shipped", "items": 3, "eta": "2024-05-02"}),
        frozenset({"no_progress"}),
    ),
    (
        "translate",
        [{"text": "hello", "target": t} for t in ("es", "es-ES", "spa")],
        "Unsupported target language. Supported: en, fr, de, it, pt, ja, zh.",
        frozenset({"no_progress"}),
    ),
]
HOLDOUT_EQUAL_RESULTS: list[tuple[str, list[dict[str, Any]], list[str]]] = [
    (
        "calendar_add",
        [{"title": t, "at": a} for t, a in (("dentist", "09:00"), ("gym", "18:00"), ("call mom", "20:00"))],
        ["Event added to your calendar."] * 3,
    ),
    ("slack_post", [{"channel": c, "text": "deploy done"} for c in ("#ops", "#web", "#api")], ['{"ok": true}'] * 3),
    ("tag_issue", [{"issue": n, "label": "bug"} for n in (41, 42, 43)], ["Label applied."] * 3),
    (
        "save_memory",
        [{"fact": f} for f in ("user prefers metric units", "user lives in Oslo", "user is vegetarian")],
        ["Memory stored successfully. I will remember this for future conversations."] * 3,
    ),
    (
        "send_sms",
        [{"to": n, "text": "your code is ready"} for n in ("+4712345678", "+4798765432", "+4711223344")],
        ["Message queued for delivery. You will be notified if delivery fails."] * 3,
    ),
    ("mark_read", [{"message_id": m} for m in ("m-1", "m-2", "m-3")], ["null"] * 3),
]


# --------------------------------------------------------------------------- builder


def default_result(tool: str, args: dict[str, Any] | str) -> str:
    """A plausible, argument-specific result page: distinct arguments give distinct results."""
    key = json.dumps(args, sort_keys=True)
    h = hashlib.sha256(f"{tool}|{key}".encode()).hexdigest()
    return json.dumps(
        [
            {
                "title": f"Result {h[:6]} for {tool}",
                "url": f"https://example.org/{h[6:14]}",
                "snippet": f"doc {h[14:30]}",
            },
            {"title": f"Result {h[30:36]}", "url": f"https://example.org/{h[36:44]}", "snippet": f"doc {h[44:60]}"},
        ]
    )


_FILLERS = [
    V2Call("calculator", {"expression": "17 * 23"}),
    V2Call("get_time", {"timezone": "Europe/Paris"}),
    V2Call("calculator", {"expression": "1024 / 8"}),
    V2Call("get_weather", {"city": "Lisbon"}),
]


def _args_of(p: Paraphrases, text: str) -> dict[str, Any] | str:
    if p.field is None:
        return text
    return {p.field: text, **dict(p.extra)}


def runs(part: str = "dev") -> list[V2Run]:
    """Every labelled run of the corpus, producer vocabularies assigned round-robin.

    ``part``: ``"dev"`` (the rules were developed on it), ``"holdout"`` (written after they
    were frozen, scored once) or ``"all"``.

    Paraphrase groups give two semantic runs each: all phrasings in order with a filler call
    in front, and the first three in reverse order with another tool's call between two of
    them (a chain links a call to the previous call of the tool or the one before).
    """
    out: list[V2Run] = []

    def add(name: str, category: str, calls: list[V2Call], loops: frozenset[str] | set[str]) -> None:
        for c in calls:
            if c.result is None and c.error is None:
                c.result = default_result(c.tool, c.args)
        out.append(V2Run(name, category, calls, frozenset(loops)))

    parts = {"dev": [("", False)], "holdout": [("h-", True)], "all": [("", False), ("h-", True)]}[part]
    for prefix, held in parts:
        _build(add, prefix, held)
    for i, run in enumerate(out):
        run.vocab = VOCABULARIES[i % len(VOCABULARIES)]
    return out


def _build(add: Any, prefix: str, held: bool) -> None:
    paraphrases = HOLDOUT_PARAPHRASES if held else PARAPHRASES
    different = HOLDOUT_DIFFERENT_QUESTIONS if held else DIFFERENT_QUESTIONS
    knobs = HOLDOUT_KNOB_TWEAKS if held else KNOB_TWEAKS
    pages = HOLDOUT_PAGINATION if held else PAGINATION
    swaps = HOLDOUT_ENTITY_SWAPS if held else ENTITY_SWAPS
    same = HOLDOUT_SAME_RESULT if held else SAME_RESULT
    equal = HOLDOUT_EQUAL_RESULTS if held else EQUAL_RESULTS
    for n, p in enumerate(paraphrases):
        filler = _FILLERS[n % len(_FILLERS)]
        calls = [V2Call(filler.tool, filler.args)] + [V2Call(p.tool, _args_of(p, t)) for t in p.phrasings]
        add(f"{prefix}paraphrase-{n}-all", "paraphrase", calls, {"semantic"})
        a, b, c = p.phrasings[:3][::-1]
        other = _FILLERS[(n + 1) % len(_FILLERS)]
        calls = [
            V2Call(p.tool, _args_of(p, a)),
            V2Call(p.tool, _args_of(p, b)),
            V2Call(other.tool, other.args),
            V2Call(p.tool, _args_of(p, c)),
        ]
        add(f"{prefix}paraphrase-{n}-reversed", "paraphrase", calls, {"semantic"})
    for n, (tool, fld, texts) in enumerate(different):
        add(
            f"{prefix}different-{n}",
            "different_questions",
            [V2Call(tool, {fld: t} if fld else t) for t in texts],
            set(),
        )
    for n, (tool, argsets) in enumerate(knobs):
        add(f"{prefix}knob-{n}", "knob", [V2Call(tool, a) for a in argsets], {"semantic"})
    for n, (tool, argsets) in enumerate(pages):
        add(f"{prefix}pagination-{n}", "pagination", [V2Call(tool, a) for a in argsets], set())
    if not held:
        for n, (tool, args) in enumerate(SAME_PAGE):
            add(f"same-page-{n}", "same_page", [V2Call(tool, args) for _ in range(3)], {"exact"})
    for n, (tool, argsets) in enumerate(swaps):
        add(f"{prefix}entity-{n}", "entity_swap", [V2Call(tool, a) for a in argsets], set())
    for n, (tool, argsets, result, kinds) in enumerate(same):
        add(f"{prefix}same-result-{n}", "same_result", [V2Call(tool, a, result) for a in argsets], kinds)
    if not held:
        # A site's login wall met again in other runs: still no progress in each run (a tool's
        # answer that recurs across runs is what the optional boilerplate guard discounts).
        for k, path in enumerate(("b/7", "c/3")):
            urls = [
                f"https://news.example/{path}",
                f"https://news.example/{path}?amp=1",
                f"https://m.news.example/{path}",
            ]
            add(
                f"same-result-wall-{k}",
                "same_result",
                [V2Call("fetch_page", {"url": u}, LOGIN_WALL) for u in urls],
                {"no_progress"},
            )
    # Acknowledgements recur: each equal-results case in three runs (arguments in another order).
    for n, (tool, argsets, results) in enumerate(equal):
        for k in range(3):
            rotated = argsets[k:] + argsets[:k]
            add(
                f"{prefix}equal-result-{n}-{k}",
                "equal_results",
                [V2Call(tool, a, r) for a, r in zip(rotated, results, strict=True)],
                set(),
            )
    if not held:
        for name, calls, kinds in CLASSIC:
            add(name, "classic", [V2Call(c.tool, c.args, c.result, c.error) for c in calls], kinds)


def argument_text(call: V2Call, vocab: str) -> str:
    """The argument text a producer of ``vocab`` sends for the call (the collector's input)."""
    if isinstance(call.args, str):
        return call.args
    if vocab == "traceloop":
        return json.dumps({"args": [], "kwargs": call.args})
    if vocab == "loopsight":
        from loopsight.hashing import canonical_json

        return canonical_json(call.args)
    return json.dumps(call.args)


def result_text(call: V2Call, vocab: str) -> str | None:
    """The result text a producer of ``vocab`` sends (Traceloop JSON-encodes what the tool returned)."""
    if call.result is None:
        return None
    return json.dumps(call.result) if vocab == "traceloop" else call.result


def to_attributes(call: V2Call, vocab: str, result_hash: Any = None) -> dict[str, Any]:
    """The tool span's attributes in ``vocab``, for emitting the corpus through the collector
    once it computes the v2 columns. loopsight's decorators send hashes, not the result:
    pass ``result_hash`` (e.g. ``ingest.features.result_fingerprint``) to fill
    ``loopsight.tool.result_hash``."""
    text = argument_text(call, vocab)
    result = result_text(call, vocab)
    if vocab == "openinference":
        attrs: dict[str, Any] = {"openinference.span.kind": "TOOL", "tool.name": call.tool, "input.value": text}
        if result is not None:
            attrs["output.value"] = result
    elif vocab == "traceloop":
        attrs = {"traceloop.span.kind": "tool", "traceloop.entity.name": call.tool, "traceloop.entity.input": text}
        if result is not None:
            attrs["traceloop.entity.output"] = result
    else:
        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.tool,
            "gen_ai.tool.call.arguments": text,
        }
        if vocab == "loopsight":
            from loopsight.hashing import args_hash

            attrs["loopsight.tool.args_hash"] = args_hash(call.args)
            fp = result_hash(result) if result_hash is not None and result is not None else None
            if fp is not None:
                attrs["loopsight.tool.result_hash"] = format(fp, "016x")
        elif result is not None:
            attrs["gen_ai.tool.call.result"] = result
    if call.error:
        attrs["error.type"] = call.error
    return attrs


# --------------------------------------------------------------------------- latency series


@dataclass
class LatencySeries:
    """Latencies of one (agent, tool) over a window, with the calls that are truly slow."""

    name: str
    durations_ms: list[float]
    slow: list[bool] = field(default_factory=list)


def _lognormal(rng: random.Random, median: float, sigma: float, n: int) -> list[float]:
    return [median * math.exp(rng.gauss(0.0, sigma)) for _ in range(n)]


def latency_series(seed: int = 21) -> list[LatencySeries]:
    """The slow-call series (each call labelled slow or not), deterministic for a seed.

    Slow calls are 12–40× the tool's median (the issue's cases at their stated sizes); the
    natural spreads are lognormal with sigma 0.3–0.8 and nothing injected.
    """
    rng = random.Random(seed)
    out: list[LatencySeries] = []

    def series(name: str, median: float, sigma: float, n: int, n_slow: int, lo: float, hi: float) -> None:
        fast = _lognormal(rng, median, sigma, n - n_slow)
        slow = [median * rng.uniform(lo, hi) for _ in range(n_slow)]
        items = [(d, False) for d in fast] + [(d, True) for d in slow]
        rng.shuffle(items)
        out.append(LatencySeries(name, [d for d, _ in items], [s for _, s in items]))

    # the issue: 20 calls of 3.5-5 s among 258 calls of ~150 ms
    fast = _lognormal(rng, 150.0, 0.15, 258)
    slow = [rng.uniform(3500, 5000) for _ in range(20)]
    items = [(d, False) for d in fast] + [(d, True) for d in slow]
    rng.shuffle(items)
    out.append(LatencySeries("issue-20-of-278", [d for d, _ in items], [s for _, s in items]))
    series("8pct-at-25x", 400.0, 0.3, 200, 16, 25.0, 25.0)
    for share in (0.01, 0.05, 0.10):
        for median, sigma in ((120.0, 0.3), (900.0, 0.4)):
            n = 400
            series(f"slow-{int(share * 100)}pct-median{int(median)}", median, sigma, n, int(n * share), 12.0, 40.0)
    for median, sigma in ((80.0, 0.3), (420.0, 0.5), (900.0, 0.8), (2500.0, 0.6)):
        series(f"natural-median{int(median)}-sigma{sigma}", median, sigma, 500, 0, 1, 1)
    series("small-sample-30", 200.0, 0.3, 30, 3, 15.0, 30.0)
    return out


# --------------------------------------------------------------------------- through the collector


def specs(part: str = "all", start_index: int = 0) -> tuple[list[Any], dict[int, V2Run]]:
    """The corpus as runs the detection corpus emitter sends through the real ingest (one model
    turn per call, then an answer): ``(RunSpec list, {index: V2Run})``."""
    from datetime import timedelta

    from detection_corpus import BASE, Call, RunSpec, Step

    out, by_index = [], {}
    for n, run in enumerate(runs(part)):
        index = start_index + n
        steps = [
            Step(900 + 40 * k, 40, 250.0, 5.0, [Call(c.tool, c.args, c.duration_ms, c.error, None, result=c.result)])
            for k, c in enumerate(run.calls)
        ]
        steps.append(Step(900 + 40 * len(run.calls), 60, 250.0, 5.0))
        out.append(
            RunSpec(
                index,
                run.vocab,
                f"v2-{run.category}",
                run.category,
                BASE + timedelta(minutes=index),
                steps,
                set(run.loops),
            )
        )
        by_index[index] = run
    return out, by_index
