"""What a run returns: :class:`RunResult` and its :class:`RunSummary`.

Example:
    >>> s = RunSummary(steps=3, tool_calls=4, tool_failures=1, loop_hits=1)
    >>> s.tool_fail_rate, s.loop_rate
    (0.25, 0.25)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class RunSummary:
    """Counters of one run.

    ``effective_steps`` are model turns that produced a usable tool result or the answer;
    ``tool_failures`` counts failed, silent-failed and guard-blocked calls;
    ``error_classes`` counts failures (failed calls, retried attempts, model errors) by
    class and ``loop_kinds`` guard hits by kind.
    """

    steps: int = 0
    effective_steps: int = 0
    tool_calls: int = 0
    tool_failures: int = 0
    retries: int = 0
    corrections: int = 0
    loop_hits: int = 0
    peak_context_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    duration_s: float = 0.0
    context_modes: list[str] = field(default_factory=list)
    calls_per_tool: dict[str, int] = field(default_factory=dict)
    error_classes: dict[str, int] = field(default_factory=dict)
    loop_kinds: dict[str, int] = field(default_factory=dict)

    def count(self, table: str, key: str) -> None:
        """Add one to ``error_classes`` or ``loop_kinds`` under ``key``."""
        counts = getattr(self, table)
        counts[key] = counts.get(key, 0) + 1

    @property
    def tool_fail_rate(self) -> float:
        """Failed share of tool calls (0.0 with no calls)."""
        return self.tool_failures / self.tool_calls if self.tool_calls else 0.0

    @property
    def loop_rate(self) -> float:
        """Guard hits per tool call (0.0 with no calls)."""
        return self.loop_hits / self.tool_calls if self.tool_calls else 0.0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict including the derived rates."""
        out = asdict(self)
        out.update(
            tool_fail_rate=round(self.tool_fail_rate, 4),
            loop_rate=round(self.loop_rate, 4),
            total_tokens=self.total_tokens,
        )
        return out


@dataclass
class RunResult:
    """The outcome of ``ReactAgent.run``: never an exception for tool or model failures.

    ``status`` is ``ok`` (completed with an answer), ``fallback`` (ended early with a
    graded fallback) or ``error``. ``message`` is what to show the user: the answer, or
    the fallback message. ``partial_results`` are the tool results it had confirmed.
    """

    status: str
    answer: str | None
    termination_reason: str
    fallback: str | None
    message: str
    partial_results: list[dict[str, Any]]
    summary: RunSummary
    messages: list[dict[str, Any]] = field(default_factory=list, repr=False)
    trace_id: str | None = None
    error: str | None = None

    @property
    def completed(self) -> bool:
        """Whether the model gave a final answer."""
        return self.termination_reason == "completed"
