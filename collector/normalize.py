"""One OTLP span, from any GenAI vocabulary, to one stored row: a pure function.

The row has the columns of the OpenTelemetry Collector ClickHouse exporter's
``otel_traces`` table plus loopsight's typed agent columns (see
``migrations/versions/0001_spans.py``). Names from OpenInference, OpenLLMetry,
Langfuse and Pydantic AI are read per ``shared/spec/attributes.md``.

Example:
    >>> from opentelemetry.proto.trace.v1 import trace_pb2
    >>> span = trace_pb2.Span(trace_id=b"\\x01" * 16, span_id=b"\\x02" * 8, name="execute_tool search")
    >>> row = normalize_span(span, {}, "", "", Limits())
    >>> row["span_type"], row["TraceId"][:4]
    ('tool', '0101')
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from loopsight import attributes as A
from loopsight.analytics.sketch import sketch

SPAN_KINDS = ("Unspecified", "Internal", "Server", "Client", "Producer", "Consumer")
STATUS_CODES = ("Unset", "Ok", "Error")
TRUNCATION_MARKER = "…[truncated]"

_EPOCH = datetime(1970, 1, 1)

_LANGFUSE_TYPES = {"agent": "agent", "generation": "llm", "tool": "tool"}
_OPENINFERENCE_KINDS = {"AGENT": "agent", "LLM": "llm", "TOOL": "tool"}
_TRACELOOP_KINDS = {"agent": "agent", "tool": "tool"}
_GENAI_OPERATIONS = {
    "invoke_agent": "agent",
    "create_agent": "other",
    "chat": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "execute_tool": "tool",
}

_TOOL_NAME_KEYS = (A.TOOL_NAME, "tool.name")
_TOOL_ARGS_KEYS = (A.TOOL_CALL_ARGUMENTS, "tool_arguments", "tool.parameters", "traceloop.entity.input", "input.value", "langfuse.observation.input")
_MODEL_KEYS = (A.REQUEST_MODEL, "llm.model_name", "langfuse.observation.model.name", A.RESPONSE_MODEL)
_AGENT_KEYS = (A.AGENT_NAME, "agent.name", "agent_name")
_INPUT_TOKEN_KEYS = (A.USAGE_INPUT_TOKENS, A.USAGE_PROMPT_TOKENS, "llm.token_count.prompt")
_OUTPUT_TOKEN_KEYS = (A.USAGE_OUTPUT_TOKENS, A.USAGE_COMPLETION_TOKENS, "llm.token_count.completion")
_CONTENT_KEYS = frozenset(
    _TOOL_ARGS_KEYS
    + (A.TOOL_CALL_RESULT, A.INPUT_MESSAGES, A.OUTPUT_MESSAGES, "output.value", "traceloop.entity.output", "langfuse.observation.output")
)
_SPAN_NAME_PREFIXES = (("invoke_agent ", "agent"), ("chat ", "llm"), ("execute_tool ", "tool"))


@dataclass(frozen=True)
class Limits:
    """Ingest limits: longer values are truncated, extra attributes and events dropped."""

    max_attribute_length: int = 8192
    max_attributes: int = 256
    max_events: int = 128
    capture_content: bool = False


def any_value_to_str(value: common_pb2.AnyValue) -> str:
    """Render an OTLP ``AnyValue`` as the ClickHouse exporter does: scalars as text, the rest as JSON."""
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which == "bool_value":
        return "true" if value.bool_value else "false"
    if which == "int_value":
        return str(value.int_value)
    if which == "double_value":
        return repr(value.double_value)
    if which is None:
        return ""
    return json.dumps(_any_value_to_py(value), ensure_ascii=False, separators=(",", ":"))


def _any_value_to_py(value: common_pb2.AnyValue, depth: int = 0) -> Any:
    which = value.WhichOneof("value")
    if depth > 16:
        return "…"
    if which == "array_value":
        return [_any_value_to_py(v, depth + 1) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _any_value_to_py(kv.value, depth + 1) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return value.bytes_value.hex()
    if which is None:
        return None
    return getattr(value, which)


def attributes_to_dict(kvs: Any, limits: Limits) -> dict[str, str]:
    """OTLP key-values to a string map, truncated to the limits."""
    out: dict[str, str] = {}
    cap = limits.max_attribute_length
    for kv in kvs:
        if len(out) >= limits.max_attributes:
            break
        text = any_value_to_str(kv.value)
        if len(text) > cap:
            text = text[:cap] + TRUNCATION_MARKER
        out[kv.key] = text
    return out


def _first(attrs: dict[str, str], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = attrs.get(key)
        if value:
            return value
    return None


def _int(value: str | None) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(float(value))
    except ValueError:
        return None


def span_type(attrs: dict[str, str], name: str) -> str:
    """Decide agent / llm / tool / other in the spec's priority order."""
    for key, table in (
        ("langfuse.observation.type", _LANGFUSE_TYPES),
        ("openinference.span.kind", _OPENINFERENCE_KINDS),
        ("traceloop.span.kind", _TRACELOOP_KINDS),
        (A.OPERATION_NAME, _GENAI_OPERATIONS),
    ):
        value = attrs.get(key)
        if value:
            return table.get(value, "other")
    if _first(attrs, _TOOL_NAME_KEYS):
        return "tool"
    if _first(attrs, _MODEL_KEYS):
        return "llm"
    for prefix, kind in _SPAN_NAME_PREFIXES:
        if name.startswith(prefix):
            return kind
    return "other"


def args_hash_of_text(text: str) -> str:
    """The args hash of raw argument text: canonical JSON when it parses, else the text itself."""
    try:
        canonical = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (ValueError, RecursionError):
        canonical = text
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:16]


_TRANSIENT = re.compile(r"timeout|timed.?out|429|too.?many|rate.?limit|5\d\d|unavailable|connection|network|temporar", re.I)
_FATAL = re.compile(r"401|403|permission|forbidden|unauthori[sz]ed|access.?denied", re.I)
_PERMANENT = re.compile(r"404|not.?found|reject|conflict|409|410|gone", re.I)
_INVALID = re.compile(r"invalid|schema|validation|malformed|unknown.?tool|valueerror|typeerror|json|argument|400|422", re.I)


def error_class_for(error_type: str) -> str:
    """Best-effort error class of a producer's ``error.type`` (or exception type)."""
    for pattern, cls in ((_FATAL, "fatal"), (_TRANSIENT, "transient"), (_PERMANENT, "permanent"), (_INVALID, "invalid_argument")):
        if pattern.search(error_type):
            return cls
    return "permanent"


def _langfuse_usage(attrs: dict[str, str]) -> tuple[int | None, int | None]:
    raw = attrs.get("langfuse.observation.usage_details")
    if not raw:
        return None, None
    try:
        usage = json.loads(raw)
    except ValueError:
        return None, None
    if not isinstance(usage, dict):
        return None, None
    return _int(str(usage.get("input", ""))), _int(str(usage.get("output", "")))


def _nanos_to_datetime(nanos: int) -> datetime:
    return datetime.fromtimestamp(nanos // 1_000_000_000, tz=timezone.utc).replace(
        tzinfo=None, microsecond=(nanos % 1_000_000_000) // 1000
    )


def normalize_span(
    span: trace_pb2.Span,
    resource: dict[str, str],
    scope_name: str,
    scope_version: str,
    limits: Limits,
) -> dict[str, Any]:
    """Turn one OTLP span into a stored row (a dict keyed by column name)."""
    attrs = attributes_to_dict(span.attributes, limits)
    name = span.name
    kind = span_type(attrs, name)
    status = STATUS_CODES[span.status.code] if 0 <= span.status.code < 3 else "Unset"

    events = []
    exception_type = None
    for event in span.events[: limits.max_events]:
        event_attrs = attributes_to_dict(event.attributes, limits)
        if event.name == "exception" and exception_type is None:
            exception_type = event_attrs.get("exception.type")
        events.append(
            {"Timestamp": _nanos_to_datetime(event.time_unix_nano), "Name": event.name, "Attributes": event_attrs}
        )
    links = [
        {
            "TraceId": link.trace_id.hex(),
            "SpanId": link.span_id.hex(),
            "TraceState": link.trace_state,
            "Attributes": attributes_to_dict(link.attributes, limits),
        }
        for link in span.links
    ]

    tool = _first(attrs, _TOOL_NAME_KEYS) if kind == "tool" else None
    if kind == "tool" and not tool:
        tool = attrs.get("traceloop.entity.name") or (name[len("execute_tool ") :] if name.startswith("execute_tool ") else name)
    agent = _first(attrs, _AGENT_KEYS)
    if kind == "agent" and not agent:
        agent = attrs.get("traceloop.entity.name") or (name[len("invoke_agent ") :] if name.startswith("invoke_agent ") else name)

    args_hash = attrs.get(A.TOOL_ARGS_HASH)
    if kind == "tool" and not args_hash:
        raw_args = _first(attrs, _TOOL_ARGS_KEYS)
        if raw_args is not None:
            args_hash = args_hash_of_text(raw_args)
    args_sketch = sketch(raw) if kind == "tool" and (raw := _first(attrs, _TOOL_ARGS_KEYS)) else None
    if not limits.capture_content:
        for key in _CONTENT_KEYS.intersection(attrs):
            del attrs[key]

    error_type = attrs.get(A.ERROR_TYPE)
    is_error = status == "Error" or attrs.get("langfuse.observation.level") == "ERROR"
    if is_error and not error_type:
        error_type = exception_type or span.status.message or "error"
    error_class = attrs.get(A.ERROR_CLASS) or (error_class_for(error_type) if is_error and error_type else None)

    input_tokens = output_tokens = None
    if kind == "llm":
        input_tokens = _int(_first(attrs, _INPUT_TOKEN_KEYS))
        output_tokens = _int(_first(attrs, _OUTPUT_TOKEN_KEYS))
        if input_tokens is None and output_tokens is None:
            input_tokens, output_tokens = _langfuse_usage(attrs)

    termination = attrs.get(A.TERMINATION_REASON)
    if kind == "agent" and not termination:
        termination = "error" if is_error else "completed"

    start_ns = span.start_time_unix_nano
    end_ns = max(span.end_time_unix_nano, start_ns)
    return {
        "Timestamp": _nanos_to_datetime(start_ns),
        "TraceId": span.trace_id.hex(),
        "SpanId": span.span_id.hex(),
        "ParentSpanId": span.parent_span_id.hex(),
        "TraceState": span.trace_state,
        "SpanName": name,
        "SpanKind": SPAN_KINDS[span.kind] if 0 <= span.kind < 6 else "Unspecified",
        "ServiceName": resource.get("service.name", ""),
        "ResourceAttributes": resource,
        "ScopeName": scope_name,
        "ScopeVersion": scope_version,
        "SpanAttributes": attrs,
        "Duration": end_ns - start_ns,
        "StatusCode": status,
        "StatusMessage": span.status.message,
        "Events": events,
        "Links": links,
        "span_type": kind,
        "operation": attrs.get(A.OPERATION_NAME),
        "agent": agent,
        "run_id": None,
        "step": _int(attrs.get(A.STEP)),
        "tool": tool,
        "args_hash": args_hash,
        "args_sketch": args_sketch,
        "model": _first(attrs, _MODEL_KEYS) if kind == "llm" else None,
        "error_type": error_type if is_error else None,
        "error_class": error_class,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "termination_reason": termination if kind == "agent" else None,
        "fallback": attrs.get(A.FALLBACK),
        "loop_kind": attrs.get(A.LOOP_KIND),
        "attempts": _int(attrs.get(A.TOOL_ATTEMPTS)),
        "end_time": _nanos_to_datetime(end_ns),
    }
