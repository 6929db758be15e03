"""The agent model every part of loopsight agrees on, as data.

What producers call things (OpenTelemetry GenAI first, then OpenInference, OpenLLMetry /
Traceloop, Langfuse, Pydantic AI, ...), how a span's type is decided, the error classes and
the one classifier both the decorators and the collector use, the closed sets (termination
reasons, loop kinds), and the rules users depend on — what a run is, what a step is, a run's
status and when it succeeded — from which the normaliser's Python and the SQL of both engines are rendered.
``shared/spec/attributes.md`` is the prose form of this module.

Example:
    >>> TOOL_NAME.keys
    ('gen_ai.tool.name', 'tool.name')
    >>> error_class_for("HTTP 429 Too Many Requests"), error_class_for("407"), error_class_for("ValueError")
    ('transient', 'fatal', 'invalid_argument')
    >>> run_ok("completed", "Ok"), run_ok("max_steps", "Unset")
    (True, False)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from loopsight import attributes as A

SpanType = Literal["agent", "llm", "tool", "other"]
SPAN_TYPES: tuple[SpanType, ...] = ("agent", "llm", "tool", "other")
ERROR_CLASSES = A.ERROR_CLASSES
TERMINATION_REASONS = A.TERMINATION_REASONS
LOOP_KINDS = A.LOOP_KINDS


@dataclass(frozen=True)
class Name:
    """One attribute key and the producer that writes it."""

    key: str
    producer: str


@dataclass(frozen=True)
class Concept:
    """One thing producers name differently: its keys in the order they are read (first present wins).

    Example:
        >>> AGENT_NAME.first({"agent.name": "helper"})
        'helper'
    """

    what: str
    names: tuple[Name, ...]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(n.key for n in self.names)

    def first(self, attrs: Mapping[str, str]) -> str | None:
        """The first non-empty value of the concept's keys in ``attrs``."""
        for key in self.keys:
            value = attrs.get(key)
            if value:
                return value
        return None


def _concept(what: str, *pairs: tuple[str, str]) -> Concept:
    return Concept(what, tuple(Name(key, producer) for key, producer in pairs))


OTEL, LEGACY, OPENINFERENCE, TRACELOOP, LANGFUSE, PYDANTIC_AI, GOOGLE_ADK = (
    "otel_genai",
    "otel_genai_legacy",
    "openinference",
    "traceloop",
    "langfuse",
    "pydantic_ai",
    "google_adk",
)

AGENT_NAME = _concept("agent name", (A.AGENT_NAME, OTEL), ("agent.name", OPENINFERENCE), ("agent_name", PYDANTIC_AI))
TOOL_NAME = _concept("tool name", (A.TOOL_NAME, OTEL), ("tool.name", OPENINFERENCE))
TOOL_ARGUMENTS = _concept(
    "tool arguments",
    (A.TOOL_CALL_ARGUMENTS, OTEL),
    ("tool_arguments", PYDANTIC_AI),
    ("traceloop.entity.input", TRACELOOP),
    ("input.value", OPENINFERENCE),
    ("langfuse.observation.input", LANGFUSE),
    ("gcp.vertex.agent.tool_call_args", GOOGLE_ADK),  # ADK before its GenAI attributes
)
"""Never OpenInference's ``tool.parameters``: that is the tool's JSON schema, the same on every call."""
TOOL_SCHEMA_KEYS = frozenset(("tool.parameters", "gen_ai.tool.json_schema"))
TOOL_MESSAGE_EVENT = "gen_ai.tool.message"
"""Strands (default attributes) sends a call's arguments only as this event's ``content``."""
TOOL_RESULT = _concept(
    "tool result",
    (A.TOOL_CALL_RESULT, OTEL),
    ("tool_response", PYDANTIC_AI),
    ("output.value", OPENINFERENCE),
    ("traceloop.entity.output", TRACELOOP),
    ("langfuse.observation.output", LANGFUSE),
    ("gcp.vertex.agent.tool_response", GOOGLE_ADK),
)
MODEL = _concept(
    "model",
    (A.REQUEST_MODEL, OTEL),
    ("llm.model_name", OPENINFERENCE),
    ("langfuse.observation.model.name", LANGFUSE),
    (A.RESPONSE_MODEL, OTEL),
)
PROVIDER = _concept(
    "provider",
    (A.PROVIDER_NAME, OTEL),
    (A.SYSTEM, LEGACY),
    ("llm.provider", OPENINFERENCE),
    ("llm.system", OPENINFERENCE),
)
INPUT_TOKENS = _concept(
    "input tokens",
    (A.USAGE_INPUT_TOKENS, OTEL),
    (A.USAGE_PROMPT_TOKENS, LEGACY),
    ("llm.token_count.prompt", OPENINFERENCE),
)
OUTPUT_TOKENS = _concept(
    "output tokens",
    (A.USAGE_OUTPUT_TOKENS, OTEL),
    (A.USAGE_COMPLETION_TOKENS, LEGACY),
    ("llm.token_count.completion", OPENINFERENCE),
)
SESSION = _concept(
    "session",
    (A.CONVERSATION_ID, OTEL),
    ("session.id", OPENINFERENCE),
    ("langfuse.session.id", LANGFUSE),
    ("traceloop.association.properties.session_id", TRACELOOP),
    ("traceloop.association.properties.thread_id", TRACELOOP),
)
CACHE_READ_TOKENS = _concept(
    "cached input tokens (included in the input tokens)",
    ("gen_ai.usage.cache_read.input_tokens", OTEL),
    ("gen_ai.usage.cache_read_input_tokens", LEGACY),
    ("llm.token_count.prompt_details.cache_read", OPENINFERENCE),
    ("gen_ai.usage.prompt_tokens_details.cached_tokens", TRACELOOP),
    ("gen_ai.usage.details.cache_read_tokens", PYDANTIC_AI),
)
CACHE_WRITE_TOKENS = _concept(
    "cache-write input tokens (included in the input tokens)",
    ("gen_ai.usage.cache_creation.input_tokens", OTEL),
    ("gen_ai.usage.cache_creation_input_tokens", LEGACY),
    ("gen_ai.usage.cache_write_input_tokens", LEGACY),
    ("llm.token_count.prompt_details.cache_write", OPENINFERENCE),
    ("gen_ai.usage.details.cache_write_tokens", PYDANTIC_AI),
)
LANGFUSE_USAGE = "langfuse.observation.usage_details"
"""Langfuse's token counts: a JSON object (keys ``input``/``output`` or, from the SDK's OpenAI
wrapper, ``prompt_tokens``/``completion_tokens`` with ``prompt_tokens_details.cached_tokens``)."""
LANGFUSE_USAGE_KEYS = {
    "input": ("input", "prompt_tokens", "input_tokens"),
    "output": ("output", "completion_tokens", "output_tokens"),
    "cache_read": (
        "cache_read_input_tokens",
        "input_cached_tokens",
        "input_cache_read",
        "prompt_tokens_details.cached_tokens",
        "input_tokens_details.cached_tokens",
    ),
    "cache_write": ("cache_creation_input_tokens", "input_cache_creation", "input_cache_write"),
}
LANGFUSE_INCLUDED_CACHE_KEYS = frozenset(("prompt_tokens_details.cached_tokens", "input_tokens_details.cached_tokens"))
"""Cache counts that an OpenAI usage object's own input count includes (Langfuse's ``input`` and
Anthropic's ``input_tokens`` leave the others out)."""
LANGFUSE_LEVEL = "langfuse.observation.level"
LANGFUSE_STATUS_MESSAGE = "langfuse.observation.status_message"
TRACELOOP_ENTITY_NAME = "traceloop.entity.name"

# -- span type ------------------------------------------------------------------------------

SPAN_TYPE_ATTRIBUTES: tuple[tuple[str, Mapping[str, SpanType]], ...] = (
    ("langfuse.observation.type", {"agent": "agent", "generation": "llm", "tool": "tool"}),
    ("openinference.span.kind", {"AGENT": "agent", "LLM": "llm", "TOOL": "tool"}),
    ("traceloop.span.kind", {"agent": "agent", "tool": "tool"}),
    (
        A.OPERATION_NAME,
        {
            "invoke_agent": "agent",
            "create_agent": "other",
            "chat": "llm",
            "text_completion": "llm",
            "generate_content": "llm",
            "execute_tool": "tool",
        },
    ),
)
"""Decide the span type in this order: the first of these attributes present with a value it
maps decides (OpenLLMetry's ``workflow`` span that is an ``invoke_agent`` is an agent); a span with
only unmapped values (CHAIN, task) is ``other``; without any, a tool name → tool, a model → llm,
Pydantic AI's run span → agent, else the span name's prefix."""
SPAN_NAME_PREFIXES: tuple[tuple[str, SpanType], ...] = (
    ("invoke_agent ", "agent"),
    ("chat ", "llm"),
    ("execute_tool ", "tool"),
)
PYDANTIC_AI_RUN_SPAN = "agent run"  # Pydantic AI's run span before GenAI operation names
FRAMEWORK_RUN_SPANS = re.compile(r"^(FunctionAgent|ReActAgent|CodeActAgent|AgentWorkflow)\.run$")
"""A framework's agent run that no instrumentation marks as an agent (LlamaIndex's CHAIN
``FunctionAgent.run``): an agent span, so its trace has a run."""
BOOKKEEPING_TOOLS = frozenset(("final_answer", "(merged tools)"))
"""Tool spans that are a framework's own bookkeeping, not a call the model asked for
(smolagents' ``final_answer``, Google ADK's ``(merged tools)`` after parallel calls)."""
NOT_MODEL_CALLS = ("._prepare_chat_with_tools",)
"""LLM-kind spans that only prepare a request (LlamaIndex): the model call is their sibling."""


def span_type(attrs: Mapping[str, str], name: str) -> SpanType:
    """The span's type by :data:`SPAN_TYPE_ATTRIBUTES`, then its other attributes and name;
    a framework's own bookkeeping (:data:`BOOKKEEPING_TOOLS`, :data:`NOT_MODEL_CALLS`) is ``other``.

    Example:
        >>> span_type({"openinference.span.kind": "TOOL"}, "lookup"), span_type({}, "chat gpt-4o")
        ('tool', 'llm')
        >>> span_type({"openinference.span.kind": "CHAIN"}, "FunctionAgent.run")
        'agent'
    """
    kind = _declared_type(attrs, name)
    if kind == "tool" and TOOL_NAME.first(attrs) in BOOKKEEPING_TOOLS:
        return "other"
    if kind == "llm" and name.endswith(NOT_MODEL_CALLS):
        return "other"
    if kind == "other" and FRAMEWORK_RUN_SPANS.match(name):
        return "agent"
    return kind


def _declared_type(attrs: Mapping[str, str], name: str) -> SpanType:
    declared = False
    for key, table in SPAN_TYPE_ATTRIBUTES:
        value = attrs.get(key)
        if value:
            kind = table.get(value)
            if kind is not None:
                return kind
            declared = True  # a kind this table does not map (CHAIN, workflow): a later attribute may
    if declared:
        return "other"
    get = attrs.get
    for key in TOOL_NAME.keys:
        if get(key):
            return "tool"
    for key in MODEL.keys:
        if get(key):
            return "llm"
    if "agent_name" in attrs or name == PYDANTIC_AI_RUN_SPAN:
        return "agent"
    for prefix, kind in SPAN_NAME_PREFIXES:
        if name.startswith(prefix):
            return kind
    return "other"


# -- content --------------------------------------------------------------------------------

CONTENT_KEYS: frozenset[str] = frozenset(
    (
        *TOOL_ARGUMENTS.keys,
        *TOOL_RESULT.keys,
        *TOOL_SCHEMA_KEYS,  # not arguments, but the tool's description, repeated on every call
        A.INPUT_MESSAGES,
        A.OUTPUT_MESSAGES,
        "gen_ai.system_instructions",
        "final_result",
        "all_messages_events",
        "llm.prompts",
        "pydantic_ai.all_messages",
        "events",  # Pydantic AI: the run's messages; a chat span's messages (v1 attributes)
        "langfuse.trace.input",
        "langfuse.trace.output",
        "llm.prompt_template.template",
        "llm.prompt_template.variables",
        "llm.input_messages",  # OpenInference's lists as one JSON string (the prefixes below: flattened)
        "llm.output_messages",
        "gen_ai.prompt",  # legacy OpenLLMetry and LiteLLM, unflattened
        "gen_ai.completion",
        "mlflow.spanInputs",
        "mlflow.spanOutputs",
        # Vercel AI SDK
        "ai.prompt",
        "ai.prompt.messages",
        "ai.prompt.tools",
        "ai.response.text",
        "ai.response.toolCalls",
        "ai.response.object",
        "ai.toolCall.args",
        "ai.toolCall.result",
        "ai.value",
        "ai.values",
        "ai.embedding",
        "ai.embeddings",
        # Google ADK (its tool call's arguments and response are in the concepts above)
        "gcp.vertex.agent.llm_request",
        "gcp.vertex.agent.llm_response",
        "gcp.vertex.agent.data",
        # OpenInference
        "reranker.query",
        "tool_call.function.arguments",
    )
)
"""Attributes holding what an agent was told or returned: dropped unless content capture is on."""
CONTENT_PREFIXES: tuple[str, ...] = (
    "llm.input_messages.",
    "llm.output_messages.",
    "gen_ai.prompt.",
    "gen_ai.completion.",
    "llm.prompts.",
    "llm.completions.",
    "retrieval.documents.",
    "reranker.input_documents.",
    "reranker.output_documents.",
    "embedding.embeddings.",
)
"""Flattened message and document lists (OpenInference ``llm.input_messages.0.message.content``,
legacy OpenLLMetry ``gen_ai.prompt.0.content``): dropped by prefix unless content capture is on."""
EVENT_CONTENT_KEYS: frozenset[str] = frozenset(
    ("gen_ai.prompt", "gen_ai.completion", "gen_ai.event.content", "content", "body", "message", "tool_calls")
)
"""Content in span events (GenAI content events: ``gen_ai.choice``'s ``message``, an assistant
message's ``tool_calls`` with the arguments, Azure AI Inference's and Semantic Kernel's
``gen_ai.event.content``)."""

REDACTED_RESOURCE_KEYS = ("process.command_line", "process.command_args", "process.command")
"""Resource attributes that are not content but may hold secrets (the SDK's process detector
sends the command line, ``--api-key sk-...`` included): always redacted."""

# -- errors ---------------------------------------------------------------------------------

EXCEPTION_NAMES: Mapping[str, frozenset[str]] = {
    "transient": frozenset(
        {
            "ConnectionError",
            "APIConnectionError",
            "ConnectError",
            "NetworkError",
            "TransportError",
            "RemoteProtocolError",
            "ProtocolError",
            "RateLimitError",
            "InternalServerError",
            "ServiceUnavailableError",
            "APITimeoutError",
            "TimeoutException",
            "ServerDisconnectedError",
            "ClientConnectionError",
            "OverloadedError",
            "gaierror",
            "TimeoutError",
            "ConnectionResetError",
            "ConnectionRefusedError",
            "ConnectionAbortedError",
            "BrokenPipeError",
        }
    ),
    "fatal": frozenset({"AuthenticationError", "PermissionDeniedError", "PermissionError"}),
    "permanent": frozenset({"NotFoundError", "FileNotFoundError", "ConflictError"}),
    "invalid_argument": frozenset(
        {
            "ValidationError",
            "SchemaError",
            "JSONDecodeError",
            "BadRequestError",
            "UnprocessableEntityError",
            "ValueError",
            "TypeError",
        }
    ),
}
"""Exception type names (or a base class's) and their error class."""

# Free text (a status message, a producer's error.type): the first pattern that matches decides.
_ERROR_WORDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("fatal", re.compile(r"permission|forbidden|unauthori[sz]ed|access.?denied|auth(entication)?.?failed", re.I)),
    (
        "transient",
        re.compile(
            r"timeout|timed.?out|too.?many|rate.?limit|unavailable|connection|network|temporar|overloaded", re.I
        ),
    ),
    ("permanent", re.compile(r"not.?found|reject|conflict|gone", re.I)),
    ("invalid_argument", re.compile(r"invalid|schema|validation|malformed|unknown.?tool|json|argument", re.I)),
)
_STATUS = re.compile(r"(?<![\d.])([45]\d\d)(?![\d.])")


def class_for_status(status: int) -> str:
    """The error class of an HTTP status code.

    Example:
        >>> [class_for_status(s) for s in (400, 401, 404, 407, 408, 429, 503)]
        ['invalid_argument', 'fatal', 'permanent', 'fatal', 'transient', 'transient', 'transient']
    """
    if status in (408, 425, 429) or status >= 500:
        return "transient"
    if status in (401, 403, 407):
        return "fatal"
    if status in (400, 422):
        return "invalid_argument"
    return "permanent"


def class_for_exception_name(name: str) -> str | None:
    """The error class of an exception type name, or None when the name says nothing.

    Example:
        >>> class_for_exception_name("ReadTimeout"), class_for_exception_name("KeyError")
        ('transient', None)
    """
    for error_class, names in EXCEPTION_NAMES.items():
        if name in names:
            return error_class
    if name.endswith(("Timeout", "TimeoutError")):
        return "transient"
    return None


@lru_cache(maxsize=4096)
def _error_class_for(text: str) -> str:
    stripped = text.strip()
    if stripped.isdigit() and 100 <= int(stripped) <= 599:
        return class_for_status(int(stripped))
    by_name = class_for_exception_name(stripped.rsplit(".", 1)[-1])
    if by_name is not None:
        return by_name
    status = _STATUS.search(text)
    if status is not None:
        return class_for_status(int(status.group(1)))
    for error_class, pattern in _ERROR_WORDS:
        if pattern.search(text):
            return error_class
    return "permanent"


def error_class_for(error_type: str) -> str:
    """The error class of an error type as any producer writes it: an HTTP status (``"429"``),
    an exception type name (``"ReadTimeout"``, ``"openai.RateLimitError"``), or free text
    (``"HTTP 503 Service Unavailable"``, ``"permission denied"``). Unknown: ``permanent``.

    The decorators fall back on it for exceptions they cannot place otherwise, so one failure
    gets one class whoever reports it.

    Example:
        >>> error_class_for("openai.RateLimitError"), error_class_for("upstream timed out after 30s")
        ('transient', 'transient')
    """
    if len(error_type) > 256:  # long messages: classified on their head, not remembered
        return _error_class_for.__wrapped__(error_type[:256])
    return _error_class_for(error_type)


# -- runs, steps, outcome -------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """A rule users depend on: its statement, and its SQL over the stored columns (DuckDB
    dialect; the other engine gets the translation)."""

    statement: str
    sql: str


RUN = Rule(
    "A run is an agent span with no agent span above it in its trace; its run_id is that span's id. "
    "Every span under it belongs to the run (sub-agents included). A trace with no agent span that "
    "holds model calls is one run too: its root. A trace without (a tool called outside any agent, "
    "an agent being built) is no run.",
    '"SpanId" = run_id',
)
STEP = Rule(
    "A step is one model turn: a model call and the tool calls it asked for. A model call inside a "
    "model call (another instrumentation's span for the same request) or inside a tool (a tool that "
    "summarises with a model) is the same step. Where a "
    "producer gives no step, a run's model calls are numbered by start time and a tool call takes "
    "the step of the last model call begun before it.",
    "span_type IN ('llm', 'tool')",
)
USAGE_COUNTED_ABOVE = Rule(
    "A model call inside a model call is usually two instrumentations' spans of one request (a "
    "framework's and its client library's, OpenInference's LangChain and OpenAI instrumentors) "
    "reporting the same usage: its tokens count only when the model call around it reports none.",
    # p: the parent span of an llm span; true when that llm span's tokens are counted on p instead
    "(p.span_type = 'llm' AND (p.input_tokens IS NOT NULL OR p.output_tokens IS NOT NULL))",
)
RUN_OK_REASON = "completed"
RUN_OK = Rule(
    "A run succeeded when it completed and did not fail; a run that stopped at a limit, in a loop or "
    "on a timeout did not, whether or not it raised.",
    f"(termination_reason = '{RUN_OK_REASON}' AND \"StatusCode\" <> 'Error')",
)
RUN_STATUS = Rule(
    "A run's status is 'error' exactly where it failed: its run span, or the span of the agent it "
    "names, has status Error (the framework raised); else 'ok'. How it ended is its termination "
    "reason.",
    "(CASE WHEN status_code = 'Error' THEN 'error' ELSE 'ok' END)",
)

CACHE_CONVENTION = Rule(
    "A model call's input tokens include its cached and cache-write input tokens (OpenTelemetry "
    "GenAI). A producer whose input count leaves them out (Anthropic's and Bedrock's raw usage, "
    "Langfuse's usage details) is read as such where it shows: a Langfuse 'input' beside cache "
    "counts, Anthropic-style cache keys in a usage object, or cache counts larger than the input "
    "count; the cache counts are then added to the input.",
    "input_tokens >= coalesce(cache_read_tokens, 0) + coalesce(cache_write_tokens, 0)",
)
PRICE_OF_CALL = Rule(
    "A model call is priced by the price row of its provider and model (as its span names them) in "
    "effect on the day it started and for its input tokens' tier: above a tier's threshold every "
    "token of the call pays the tier's prices, as providers bill each request. A pair without "
    "prices, or unknown, leaves the call unpriced.",
    # c: a run_calls row, p: the model_prices rows of its pair (LEFT JOIN ... ON provider, model)
    "(p.model IS NULL OR (c.ts >= p.valid_from AND c.ts < p.valid_until "
    "AND c.input_tokens >= p.input_from AND c.input_tokens < p.input_to))",
)
CALL_COST = Rule(
    "A call costs its uncached input at the input price, its cached input at the cached-input "
    "price, its cache writes at the cache-write price (a cache unit without a price of its own is "
    "billed as input) and its output at the output price; an unpriced call costs NULL, never 0.",
    "(CASE WHEN p.input_mtok IS NOT NULL THEN ("
    "greatest(c.input_tokens - CASE WHEN p.cache_read_mtok IS NULL THEN 0 ELSE c.cache_read_tokens END"
    " - CASE WHEN p.cache_write_mtok IS NULL THEN 0 ELSE c.cache_write_tokens END, 0) * p.input_mtok"
    " + CASE WHEN p.cache_read_mtok IS NULL THEN 0 ELSE c.cache_read_tokens * p.cache_read_mtok END"
    " + CASE WHEN p.cache_write_mtok IS NULL THEN 0 ELSE c.cache_write_tokens * p.cache_write_mtok END"
    " + c.output_tokens * p.output_mtok) / 1e6 END)",
)
CACHE_SAVING = Rule(
    "What a call's prompt cache saved: its cached input at the input price less the cached-input "
    "price, less what its cache writes cost above the input price (a cache unit without a price of "
    "its own saved nothing); NULL for an unpriced call.",
    "(CASE WHEN p.input_mtok IS NOT NULL THEN ("
    "CASE WHEN p.cache_read_mtok IS NULL THEN 0 ELSE c.cache_read_tokens * (p.input_mtok - p.cache_read_mtok) END"
    " - CASE WHEN p.cache_write_mtok IS NULL THEN 0 ELSE c.cache_write_tokens * (p.cache_write_mtok - p.input_mtok) END"
    ") / 1e6 END)",
)


AGENT_NAME_KEYS_LAST = ("graph.node.id",)
"""Read after the span's own name fails: OpenInference's graph node of an agent span (CrewAI's role)."""
AGENT_METHOD_SUFFIXES = (".run", "._execute_core", ".execute_task", ".kickoff", ".invoke", ".ainvoke")
"""An agent span named after the method that ran it (``support_agent.run``): the name is before."""
GENERIC_AGENT_NAMES = frozenset(("Agent workflow", "agent run", "Agent", "Workflow"))
"""Agent span names that name no agent (the OpenAI Agents SDK's root ``Agent workflow``)."""
CAPTURE_SETTINGS: tuple[tuple[str, str], ...] = (
    ("gcp.vertex.agent", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (Google ADK)"),
    ("openinference.", "OPENINFERENCE_HIDE_INPUTS unset or false (OpenInference)"),
    ("opentelemetry.instrumentation.", "TRACELOOP_TRACE_CONTENT=true (OpenLLMetry)"),
    ("pydantic-ai", "InstrumentationSettings(include_content=True) (Pydantic AI)"),
    ("strands.", "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental (Strands)"),
    ("langfuse", "Langfuse(mask=None) and @observe(capture_input=True) (Langfuse)"),
    ("loopsight", "a tool span records its arguments' hash always; check the tool is a @loopsight.tool"),
)
"""What turns tool-argument capture on, by the instrumentation scope that left it off (prefix match)."""


def capture_setting(scopes: Iterable[str]) -> str | None:
    """The setting that would have captured tool arguments, for the instrumentation scopes of a run.

    Example:
        >>> capture_setting(["gcp.vertex.agent"])
        'OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY (Google ADK)'
        >>> capture_setting(["my.own.tracer"]) is None
        True
    """
    for scope in scopes:
        for prefix, setting in CAPTURE_SETTINGS:
            if scope.startswith(prefix):
                return setting
    return None


AGENT_NAME_IN_TEXT = re.compile(r"""current_agent_name\s*[=:]\s*['"]([^'"]{1,128})['"]""")
"""LlamaIndex names its agent only inside the workflow state it sends as the run's input."""


def agent_name_of_span(name: str) -> str | None:
    """The agent name a span's own name gives, or None when it names none.

    Example:
        >>> agent_name_of_span("invoke_agent helper"), agent_name_of_span("support_agent._execute_core")
        ('helper', 'support_agent')
        >>> agent_name_of_span("Agent workflow") is None
        True
    """
    if name.startswith("invoke_agent "):
        name = name[len("invoke_agent ") :]
    for suffix in AGENT_METHOD_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    return None if not name or name in GENERIC_AGENT_NAMES else name


TERMINATION_SIGNALS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"tool_calls_limit|tool.?calls?.?limit", re.I), "max_tool_calls"),
    (re.compile(r"tokens?.?(budget|limit)", re.I), "token_budget"),  # Pydantic AI's input/output/total_tokens_limit
    (
        re.compile(r"max.?turns?.?exceeded|limit_turns|turn.?limit.?exceeded", re.I),
        "max_steps",
    ),  # OpenAI Agents, Strands
    (re.compile(r"GraphRecursionError|recursion.?limit|need more steps to process", re.I), "max_steps"),  # LangGraph
    (re.compile(r"max(imum)?.?iterations?.{0,20}reached|max.?steps.{0,20}reached", re.I), "max_steps"),  # LlamaIndex
    (re.compile(r"LlmCallsLimitExceeded|request_limit", re.I), "max_steps"),  # ADK, Pydantic AI
)
"""A framework's own signal that its turn, step or call limit stopped a run (an error type or
message, a finish reason, or the text it answers with), and the termination reason it means.
Pydantic AI raises one ``UsageLimitExceeded`` for every limit: its message names the limit, so the
type alone is no signal."""
BUDGET_STEP_KEYS = ("loopsight.budget.max_steps", "smolagents.max_steps")
"""Where a run's step budget is written (its input says ``"max_iter": N`` for CrewAI)."""
MAX_ITER_IN_TEXT = re.compile(r"\"max_iter\"\s*:\s*(\d{1,6})")


def termination_signal(*texts: str | None) -> str | None:
    """The termination reason a framework's signal in ``texts`` means, or None.

    Example:
        >>> termination_signal("Max turns exceeded: {'max_turns': 5}"), termination_signal("ValueError")
        ('max_steps', None)
    """
    for text in texts:
        if not text:
            continue
        ends = text if len(text) <= 8192 else text[:4096] + "\n" + text[-4096:]  # a final answer is last
        for pattern, reason in TERMINATION_SIGNALS:
            if pattern.search(ends):
                return reason
    return None


def run_ok(termination_reason: str | None, status_code: str | None) -> bool:
    """:data:`RUN_OK` in Python."""
    return termination_reason == RUN_OK_REASON and status_code != "Error"


def default_termination(is_error: bool) -> str:
    """A run's termination reason when its producer gives none: from its status."""
    return "error" if is_error else RUN_OK_REASON


RULES: Mapping[str, Rule] = {
    "run": RUN,
    "step": STEP,
    "usage_counted_above": USAGE_COUNTED_ABOVE,
    "run_ok": RUN_OK,
    "run_status": RUN_STATUS,
    "price_of_call": PRICE_OF_CALL,
    "call_cost": CALL_COST,
    "cache_saving": CACHE_SAVING,
}
"""The rules by the name SQL files use for them (``{{run_ok}}``)."""
