"""The scenarios every driver runs, and the tools they call (stdlib only: imported by the model
server, the drivers in each framework's venv, and the matrix checker).

A scenario is a script of model turns: each turn asks for one or more tool calls, and after the
last one the model answers. The user task carries a tag ``[ls:<scenario>:<key>]`` from which the
model server knows which script to follow; it counts the requests it served for a key to know
the turn. ``turn_limit`` never answers: it asks for a new call every turn until the framework's
own limit (``TURN_LIMIT`` model turns, set in each driver) stops the run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

AGENT_NAME = "support_agent"
INSTRUCTIONS = "You are a travel and order support agent. Use the tools to answer."
TURN_LIMIT = 5  # the framework's own turn / step / recursion limit, in model turns
MODEL = "gpt-4o-mini"
RESPONSE_MODEL = "gpt-4o-mini-2024-07-18"
TAG = re.compile(r"\[ls:([a-z_]+):([A-Za-z0-9_.\-]+)\]")


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, str]


@dataclass(frozen=True)
class Loop:
    kind: str  # exact | semantic | repeated_error | oscillation | no_progress
    tool: str  # the tool, or "a,b" (sorted) for an oscillation
    scope: str = "run"  # run | session


@dataclass(frozen=True)
class Scenario:
    name: str
    task: str
    turns: tuple[tuple[Call, ...], ...]  # tool calls asked for, turn by turn; then the answer
    answer: str
    loops: tuple[Loop, ...] = ()  # loops that happen in each run (the last run for a session)
    also_true: tuple[Loop, ...] = ()  # loops that also truly happen but are not required to be reported
    runs: int = 1  # agent invocations (2 for a session: one conversation)
    endless: bool = False  # turn_limit: a new call every turn, never an answer
    stream: bool = False
    session_loops: tuple[Loop, ...] = ()  # loops across the runs of the session (on the last run)

    def calls_for_turn(self, turn: int) -> tuple[Call, ...]:
        """The tool calls the model asks for at ``turn`` (0-based); () means answer."""
        if self.endless:
            return (Call("get_weather", {"city": CITIES[turn % len(CITIES)]}),) if turn < 40 else ()
        return self.turns[turn] if turn < len(self.turns) else ()


CITIES = ["Paris", "Oslo", "Lima", "Cairo", "Hanoi", "Quito", "Perth", "Dakar", "Minsk", "Seoul", "Bern", "Riga"]
PARAPHRASES = [
    "cheap flights london to tokyo",
    "cheapest flight from london to tokyo",
    "low cost flights london tokyo",
    "budget airfare london tokyo",
]
_FLIGHT = Call("search_flights", {"query": PARAPHRASES[0]})
_ORDER = Call("lookup_order", {"order_id": "A-1001"})
_TRACK = Call("track_package", {"order_id": "A-1001"})
_RATE = Call("get_exchange_rate", {"currency": "JPY"})

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in [
        Scenario(
            "single",
            "What is the weather in Paris?",
            ((Call("get_weather", {"city": "Paris"}),),),
            "It is 18 C and sunny in Paris.",
        ),
        Scenario(
            "exact",
            "Find me a cheap flight from London to Tokyo.",
            ((_FLIGHT,),) * 4,
            "The cheapest flight London-Tokyo is 612 GBP.",
            loops=(Loop("exact", "search_flights"),),
        ),
        Scenario(
            "semantic",
            "Find me a cheap flight from London to Tokyo.",
            tuple((Call("search_flights", {"query": q}),) for q in PARAPHRASES),
            "The cheapest flight London-Tokyo is 612 GBP.",
            loops=(Loop("semantic", "search_flights"),),
        ),
        Scenario(
            "repeated_error",
            "What is the JPY exchange rate?",
            ((_RATE,),) * 3,
            "Sorry, the exchange rate service is failing right now.",
            loops=(Loop("repeated_error", "get_exchange_rate"),),
            also_true=(Loop("exact", "get_exchange_rate"),),
        ),
        Scenario(
            "oscillation",
            "Where is my order A-1001?",
            ((_ORDER,), (_TRACK,), (_ORDER,), (_TRACK,)),
            "Order A-1001 is in transit with DHL.",
            loops=(Loop("oscillation", "lookup_order,track_package"),),
        ),
        Scenario("turn_limit", "Tell me the weather in every city you know.", (), "", endless=True),
        Scenario(
            "parallel",
            "What is the weather in Paris and in Oslo?",
            ((Call("get_weather", {"city": "Paris"}), Call("get_weather", {"city": "Oslo"})),),
            "Paris: 18 C and sunny. Oslo: 9 C and rainy.",
        ),
        Scenario(
            "session",
            "Where is my order A-1001?",
            ((_ORDER,), (_TRACK,)),
            "Order A-1001 is in transit with DHL.",
            runs=2,
            session_loops=(Loop("oscillation", "lookup_order,track_package", scope="session"),),
        ),
        Scenario(
            "streaming",
            "What is the weather in Paris?",
            ((Call("get_weather", {"city": "Paris"}),),),
            "It is 18 C and sunny in Paris.",
            stream=True,
        ),
    ]
}
CORE = ["single", "exact", "semantic", "repeated_error", "oscillation", "turn_limit"]


def task_text(scenario: Scenario, key: str) -> str:
    """The user message of one invocation: the task and its tag."""
    return f"{scenario.task} [ls:{scenario.name}:{key}]"


# --- the tools (deterministic; the drivers wrap them in each framework's tool type) ---------


def search_flights(query: str) -> str:
    """Search flights for a free-text query."""
    price = 540 + (sum(map(ord, query)) % 97)  # a different result per wording: no no_progress loop
    return f'{{"query": "{query}", "cheapest": {{"carrier": "JL", "price_gbp": {price}}}}}'


def lookup_order(order_id: str) -> str:
    """Look up an order by its id."""
    return f'{{"order_id": "{order_id}", "status": "shipped", "carrier": "DHL"}}'


def track_package(order_id: str) -> str:
    """Track the package of an order."""
    return f'{{"order_id": "{order_id}", "location": "Leipzig hub", "eta_days": 2}}'


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f'{{"city": "{city}", "temp_c": {5 + sum(map(ord, city)) % 20}, "sky": "clear"}}'


def get_exchange_rate(currency: str) -> str:
    """Exchange rate of a currency against GBP."""
    raise ValueError(f"exchange rate service rejected currency {currency}")


TOOLS = {f.__name__: f for f in [search_flights, lookup_order, track_package, get_weather, get_exchange_rate]}
TOOL_SCHEMAS = {  # one string parameter each
    "search_flights": "query",
    "lookup_order": "order_id",
    "track_package": "order_id",
    "get_weather": "city",
    "get_exchange_rate": "currency",
}


@dataclass
class Counters:
    """Tool executions observed inside the tools (the drivers' ground truth)."""

    calls: int = 0
    errors: int = 0
    log: list[tuple[str, dict[str, str], bool]] = field(default_factory=list)

    def run(self, name: str, **args: str) -> str:
        self.calls += 1
        try:
            result = TOOLS[name](**args)
        except Exception:
            self.errors += 1
            self.log.append((name, args, False))
            raise
        self.log.append((name, args, True))
        return result
