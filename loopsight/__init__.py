"""loopsight: see where tool-calling agents stall, loop and burn tokens.

Instrument an existing agent::

    import loopsight
    loopsight.configure(endpoint="http://127.0.0.1:4318", service_name="my-agent")

    @loopsight.agent(name="order-assistant", max_steps=10)
    def run(question): ...

    @loopsight.llm(model="gpt-4o")
    def call_model(messages, tools): ...

    @loopsight.tool
    def query_order(order_id: str): ...

Importing loopsight stays light: it pulls in the OpenTelemetry API/SDK only, never the
collector, DuckDB or the dashboard.
"""

from __future__ import annotations

from loopsight.config import VERSION
from loopsight.instrumentation import (
    ContextThreadPoolExecutor,
    FatalToolError,
    InvalidArgumentError,
    LlmHandle,
    PermanentToolError,
    RunHandle,
    ToolError,
    ToolHandle,
    TransientToolError,
    Usage,
    agent,
    args_hash,
    classify,
    configure,
    current_llm,
    current_run,
    current_step,
    current_tool,
    llm,
    register_classifier,
    register_error_class,
    shutdown,
    tool,
    wrap_context,
)

__version__ = VERSION

__all__ = [
    "ContextThreadPoolExecutor",
    "FatalToolError",
    "InvalidArgumentError",
    "LlmHandle",
    "PermanentToolError",
    "RunHandle",
    "ToolError",
    "ToolHandle",
    "TransientToolError",
    "Usage",
    "agent",
    "args_hash",
    "classify",
    "configure",
    "current_llm",
    "current_run",
    "current_step",
    "current_tool",
    "llm",
    "register_classifier",
    "register_error_class",
    "shutdown",
    "tool",
    "wrap_context",
]
