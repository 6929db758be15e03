"""``loopsight.react``: the reference ReAct loop, production-grade and fully instrumented.

Example:
    >>> from loopsight import react
    >>> from loopsight.react.llm import ScriptedLLM
    >>> agent = react.ReactAgent(ScriptedLLM(["Hello!"]), [], react.ReactConfig(max_steps=3))
    >>> agent.run("Say hello").answer
    'Hello!'
"""

from loopsight.react.config import DEFAULT_SYSTEM_PROMPT, ReactConfig
from loopsight.react.context import ContextPolicy, estimate_messages, estimate_tokens
from loopsight.react.guard import GuardConfig, HashingEmbedder, LoopGuard
from loopsight.react.loop import ReactAgent
from loopsight.react.result import RunResult, RunSummary
from loopsight.react.retry import RetryPolicy
from loopsight.react.silent import SilentConfig, SilentFailure, default_checks
from loopsight.react.tools import Tool, tool_def

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "ContextPolicy",
    "GuardConfig",
    "HashingEmbedder",
    "LoopGuard",
    "ReactAgent",
    "ReactConfig",
    "RetryPolicy",
    "RunResult",
    "RunSummary",
    "SilentConfig",
    "SilentFailure",
    "Tool",
    "default_checks",
    "estimate_messages",
    "estimate_tokens",
    "tool_def",
]
