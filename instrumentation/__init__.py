"""loopsight.instrumentation: decorators and context managers that emit agent spans.

Everything public here is re-exported by :mod:`loopsight`.
"""

from __future__ import annotations

from loopsight.hashing import args_hash, canonical_json

from .content import redact
from .context import ContextThreadPoolExecutor, wrap_context
from .decorators import AgentSpec, LlmSpec, ToolSpec, agent, llm, tool
from .errors import (
    FatalToolError,
    InvalidArgumentError,
    PermanentToolError,
    ToolError,
    TransientToolError,
    classify,
    register_classifier,
    register_error_class,
    unregister_classifier,
)
from .handles import LlmHandle, RunHandle, SpanHandle, ToolHandle, current_llm, current_run, current_step, current_tool
from .setup import configure, shutdown
from .tokens import Usage, extract_usage

__all__ = [
    "AgentSpec",
    "ContextThreadPoolExecutor",
    "FatalToolError",
    "InvalidArgumentError",
    "LlmHandle",
    "LlmSpec",
    "PermanentToolError",
    "RunHandle",
    "SpanHandle",
    "ToolError",
    "ToolHandle",
    "ToolSpec",
    "TransientToolError",
    "Usage",
    "agent",
    "args_hash",
    "canonical_json",
    "classify",
    "configure",
    "current_llm",
    "current_run",
    "current_step",
    "current_tool",
    "extract_usage",
    "llm",
    "redact",
    "register_classifier",
    "register_error_class",
    "shutdown",
    "tool",
    "unregister_classifier",
    "wrap_context",
]
