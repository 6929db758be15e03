"""Settings of a ReAct run: budgets, retries, loop guard, context and silent checks.

Example:
    >>> cfg = ReactConfig(max_steps=8, max_tool_calls=12, max_calls_per_tool={"search": 4})
    >>> cfg.tool_cap("search"), cfg.tool_cap("fetch")
    (4, None)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from loopsight import checks
from loopsight.react.context import ContextPolicy
from loopsight.react.guard import GuardConfig
from loopsight.react.retry import RetryPolicy
from loopsight.react.silent import SilentCheck, default_checks

DEFAULT_SYSTEM_PROMPT = (
    "You are a careful assistant that uses tools to answer. Call tools with arguments that match "
    'their JSON schema exactly. Tool errors come back as JSON objects with an "error_type" field '
    '(for example {"error_type": "NOT_FOUND"}): they describe the failed call, not the world. '
    "Never reinterpret an error as a fact (a NOT_FOUND order is not a cancelled order). When a tool "
    "keeps failing, change approach or answer with what you have confirmed, and say what is missing."
)


@dataclass
class ReactConfig:
    """Everything a :class:`~loopsight.react.ReactAgent` run is bounded by.

    Budgets: ``max_steps`` model turns, ``max_tool_calls`` in total and
    ``max_calls_per_tool`` (per tool, or ``default_max_calls_per_tool`` for all),
    ``max_seconds`` of wall clock and ``max_tokens`` (input + output over the run).
    ``default_tool_timeout`` applies to tools without their own ``timeout``; every tool
    timeout is further capped at ``deadline_share`` of the run's remaining time.
    ``max_corrections`` invalid-argument corrections are allowed per tool; the next
    invalid call ends the run. ``loop_hits_to_stop`` guard hits end the run with
    ``loop_detected``. ``llm_max_retries`` transient model failures are retried.
    """

    max_steps: int = 12
    max_tool_calls: int = 24
    max_calls_per_tool: Mapping[str, int] = field(default_factory=dict)
    default_max_calls_per_tool: int | None = None
    max_seconds: float = 120.0
    max_tokens: int = 100_000
    default_tool_timeout: float = 30.0
    deadline_share: float = 0.9
    max_corrections: int = 2
    loop_hits_to_stop: int = 2
    llm_max_retries: int = 2
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    guard: GuardConfig = field(default_factory=GuardConfig)
    context: ContextPolicy = field(default_factory=ContextPolicy)
    silent_checks: Sequence[SilentCheck] = field(default_factory=default_checks)
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    seed: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_tool_calls", "max_tokens", "loop_hits_to_stop"):
            checks.positive_int(name, getattr(self, name))
        for name in ("max_corrections", "llm_max_retries"):
            checks.non_negative_int(name, getattr(self, name))
        checks.non_negative_int("default_max_calls_per_tool", self.default_max_calls_per_tool, optional=True)
        for name in ("max_seconds", "default_tool_timeout"):
            checks.positive_number(name, getattr(self, name))
        if checks.positive_number("deadline_share", self.deadline_share) > 1:
            raise ValueError(f"deadline_share must be in (0, 1], got {self.deadline_share!r}")
        caps = self.max_calls_per_tool
        if not isinstance(caps, Mapping):
            raise TypeError(f"max_calls_per_tool must be a mapping of tool name to cap, got {caps!r}")
        for tool, cap in caps.items():
            checks.text("max_calls_per_tool's tool name", tool)
            checks.non_negative_int(f"max_calls_per_tool[{tool!r}]", cap)
        checks.instance("retry", self.retry, RetryPolicy)
        checks.instance("guard", self.guard, GuardConfig)
        checks.instance("context", self.context, ContextPolicy)
        checks.each("silent_checks", self.silent_checks, checks.function)
        checks.text("system_prompt", self.system_prompt)

    def tool_cap(self, tool: str) -> int | None:
        """The per-tool call cap for ``tool`` (None: only the total applies)."""
        return self.max_calls_per_tool.get(tool, self.default_max_calls_per_tool)
