"""The span vocabulary every part of loopsight agrees on.

OpenTelemetry GenAI semantic-convention names first, ``loopsight.*`` names for what
they lack (see ``shared/spec/attributes.md``). Import names from here instead of
spelling attribute strings in place.

Example:
    >>> from loopsight import attributes as A
    >>> A.TOOL_ARGS_HASH
    'loopsight.tool.args_hash'
"""

from __future__ import annotations

# OpenTelemetry GenAI
OPERATION_NAME = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
PROVIDER_NAME = "gen_ai.provider.name"
SYSTEM = "gen_ai.system"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_PROMPT_TOKENS = "gen_ai.usage.prompt_tokens"
USAGE_COMPLETION_TOKENS = "gen_ai.usage.completion_tokens"
USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"  # included in the input tokens
USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"  # included in the input tokens
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"

OP_INVOKE_AGENT = "invoke_agent"
OP_CHAT = "chat"
OP_EXECUTE_TOOL = "execute_tool"

# loopsight
STEP = "loopsight.step"
TOOL_ARGS_HASH = "loopsight.tool.args_hash"
TOOL_RESULT_HASH = "loopsight.tool.result_hash"
TOOL_ATTEMPTS = "loopsight.tool.attempts"
TOOL_IDEMPOTENT = "loopsight.tool.idempotent"
ERROR_CLASS = "loopsight.error.class"
LOOP_KIND = "loopsight.loop.kind"
LOOP_SIMILARITY = "loopsight.loop.similarity"
TERMINATION_REASON = "loopsight.termination.reason"
FALLBACK = "loopsight.fallback"
BUDGET_MAX_STEPS = "loopsight.budget.max_steps"
BUDGET_MAX_TOOL_CALLS = "loopsight.budget.max_tool_calls"
BUDGET_MAX_TOKENS = "loopsight.budget.max_tokens"
BUDGET_MAX_SECONDS = "loopsight.budget.max_seconds"
CONTEXT_MODE = "loopsight.context.mode"
CONTEXT_TOKENS = "loopsight.context.tokens"
BACKOFF_MS = "loopsight.backoff_ms"
# On a chat span whose tokens a nested chat span (e.g. an official OpenAI instrumentor)
# already reports: the tokens are left to that child so they are not counted twice.
USAGE_IN_CHILD = "loopsight.usage.in_child"

EVENT_RETRY = "retry"
EVENT_LOOP_DETECTED = "loop_detected"

# Closed sets
ERROR_CLASSES = ("transient", "invalid_argument", "permanent", "fatal", "empty_result", "garbage")
TERMINATION_REASONS = (
    "completed",
    "max_steps",
    "max_tool_calls",
    "timeout",
    "token_budget",
    "loop_detected",
    "repeated_error",
    "fatal_error",
    "cancelled",
    "error",
)
LOOP_KINDS = ("exact", "oscillation", "repeated_error", "semantic", "no_progress")
FALLBACKS = ("clarify", "retry_later", "permission", "partial_result")
CONTEXT_MODES = ("normal", "compact", "compress")
SPAN_TYPES = ("agent", "llm", "tool", "other")
