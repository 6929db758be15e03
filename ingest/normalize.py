"""One OTLP span, from any GenAI vocabulary, to one stored row: a pure function.

The row has the columns of the OpenTelemetry Collector ClickHouse exporter's
``otel_traces`` table plus loopsight's typed agent columns (see
``migrations/versions/0001_spans.py``). Names from OpenInference, OpenLLMetry,
Langfuse and Pydantic AI are read per ``shared/spec/attributes.md``.

Example:
    >>> from opentelemetry.proto.trace.v1 import trace_pb2
    >>> span = trace_pb2.Span(trace_id=b"\\x01" * 16, span_id=b"\\x02" * 8, name="execute_tool search")
    >>> row = normalize_span(span, {}, "", "", Limits())
    >>> row.span_type, row.TraceId[:4]
    ('tool', '0101')
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from loopsight import attributes as A
from loopsight import config
from loopsight import vocabulary as V
from loopsight.hashing import args_hash
from loopsight.ingest.arguments import parsed_call_arguments
from loopsight.ingest.features import NOT_JSON, CallFeatures, calls_features
from loopsight.redaction import redact, redact_head
from loopsight.results import result_hash as hash_result

log = logging.getLogger("loopsight.collector")

SPAN_KINDS = ("Unspecified", "Internal", "Server", "Client", "Producer", "Consumer")
STATUS_CODES = ("Unset", "Ok", "Error")
TRUNCATION_MARKER = config.TRUNCATION_MARKER
MAX_KEY_LENGTH = 1024  # attribute keys: a fixed bound, so a small value limit never cuts the names rules read
MAX_NANOS = 2**63 - 1  # OTLP times are uint64; stored times are signed 64-bit

# The vocabulary's tables, bound once (read per span on the hot path).
_TOOL_NAME_KEYS = V.TOOL_NAME.keys
_TOOL_ARGS_KEYS = V.TOOL_ARGUMENTS.keys
_TOOL_RESULT_KEYS = V.TOOL_RESULT.keys
_NO_FEATURES = (None,) * 6
_MODEL_KEYS = V.MODEL.keys
_AGENT_KEYS = V.AGENT_NAME.keys
_INPUT_TOKEN_KEYS = V.INPUT_TOKENS.keys
_OUTPUT_TOKEN_KEYS = V.OUTPUT_TOKENS.keys
_CONTENT_KEYS = V.CONTENT_KEYS
_CONTENT_PREFIXES = V.CONTENT_PREFIXES
_EVENT_CONTENT_KEYS = V.EVENT_CONTENT_KEYS
_PROVIDER_KEYS = V.PROVIDER.keys
_CACHE_READ_KEYS = V.CACHE_READ_TOKENS.keys
_CACHE_WRITE_KEYS = V.CACHE_WRITE_TOKENS.keys
_SESSION_KEYS = V.SESSION.keys
_OUTPUT_KEYS = ("output.value", "traceloop.entity.output", "langfuse.observation.output", A.OUTPUT_MESSAGES)
_INPUT_KEYS = ("input.value", "traceloop.entity.input", "langfuse.observation.input")
span_type = V.span_type


def _whole(raw_attributes: Any, attrs: dict[str, str], keys: tuple[str, ...]) -> str:
    """The first of ``keys`` in ``attrs``, whole even when the value limit cut it (the end is what
    a framework's final answer says)."""
    for key in keys:
        value = attrs.get(key)
        if not value:
            continue
        if raw_attributes is not None and value.endswith(TRUNCATION_MARKER):
            if isinstance(raw_attributes, dict):
                return str(raw_attributes.get(key, value))
            for kv in raw_attributes:
                if kv.key == key:
                    return any_value_to_str(kv.value)
        return value
    return ""


def _named_in_input(attrs: dict[str, str]) -> str | None:
    text = _first(attrs, _INPUT_KEYS)
    found = V.AGENT_NAME_IN_TEXT.search(text[:65536]) if text else None
    return found.group(1) if found else None


def _agent_name(attrs: dict[str, str], name: str) -> str | None:
    """The name of an agent span that carries no agent-name attribute (see ``docs/frameworks.md``)."""
    if V.FRAMEWORK_RUN_SPANS.match(name):  # named after its class: the agent's name is in its steps
        return _named_in_input(attrs)
    return (
        _named_in_input(attrs)
        or attrs.get(V.TRACELOOP_ENTITY_NAME)
        or V.agent_name_of_span(name)
        or _first(attrs, V.AGENT_NAME_KEYS_LAST)
    )


_FINISH_REASON = re.compile(r'"finish_reason"\s*:\s*"([^"]{1,64})"')


def _finish_reasons(event_attrs: dict[str, str]) -> list[str]:
    """The finish reasons an event gives: its own attribute, or inside its output messages."""
    found = [event_attrs["finish_reason"]] if "finish_reason" in event_attrs else []
    messages = event_attrs.get(A.OUTPUT_MESSAGES)
    if messages:
        found += _FINISH_REASON.findall(messages[:65536])
    return found


def _budget(attrs: dict[str, str]) -> None:
    """Write a framework's step budget as ``loopsight.budget.max_steps`` (it decides a ``max_steps`` end)."""
    if A.BUDGET_MAX_STEPS in attrs:
        return
    value = _first(attrs, V.BUDGET_STEP_KEYS)
    if value is None:
        text = _first(attrs, _INPUT_KEYS)
        found = V.MAX_ITER_IN_TEXT.search(text[:65536]) if text else None
        value = found.group(1) if found else None
    if value is not None and _int(value, 2**31) is not None:
        attrs[A.BUDGET_MAX_STEPS] = value


_plain_keys: set[str] = set()  # keys seen that are not content: most spans hold only these


def guard_content(attrs: dict[str, str], capture: bool, extra: frozenset[str] = frozenset()) -> None:
    """Drop content attributes in place, or with capture on redact their secrets (foreign producers may not have)."""
    if attrs.keys() <= _plain_keys and not (extra and not extra.isdisjoint(attrs)):
        return
    content = []
    for key in attrs:
        if key in _CONTENT_KEYS or key in extra or key.startswith(_CONTENT_PREFIXES):
            content.append(key)
        elif len(_plain_keys) < 65536:
            _plain_keys.add(key)
    for key in content:
        if capture:
            attrs[key] = redact(attrs[key])
        else:
            del attrs[key]


_redacted: dict[str, str] = {}  # status messages repeat ("timeout", "HTTP 429 ..."): each redacted once


def redact_message(text: str) -> str:
    """:func:`redact` for a status or exception message, remembered for repeats.

    Example:
        >>> redact_message("auth failed for sk-abcdefghijklmnopqrstuvwx")
        'auth failed for [REDACTED:api_key]'
    """
    done = _redacted.get(text)
    if done is None:
        done = redact(text)
        if len(_redacted) < 4096 and len(text) <= 1024:
            _redacted[text] = done
    return done


def _redact_exception(event_attrs: dict[str, str]) -> None:
    """An exception's message and stacktrace are not content, but SDKs fill them from ``str(exc)``
    (arguments, keys): redacted whatever the content setting."""
    for key in ("exception.message", "exception.stacktrace"):
        value = event_attrs.get(key)
        if value:
            event_attrs[key] = redact_message(value)


@dataclass(frozen=True)
class Limits:
    """Ingest limits: longer values (and span, event and scope names, status messages, trace
    states, link ids) are truncated, extra attributes, events and links dropped (``max_events`` bounds
    links too). Keys longer than :data:`MAX_KEY_LENGTH` are truncated whatever the limits."""

    max_attribute_length: int = config.DEFAULT_MAX_ATTRIBUTE_LENGTH
    max_attributes: int = config.DEFAULT_MAX_ATTRIBUTES
    max_events: int = config.DEFAULT_MAX_EVENTS
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
    """OTLP key-values to a string map: values longer than the limit end with the marker,
    keys beyond ``max_attributes`` are dropped."""
    out: dict[str, str] = {}
    cap = limits.max_attribute_length
    most = limits.max_attributes
    bounded = len(kvs) > most  # otherwise the count check can never trigger
    for kv in kvs:
        if bounded and len(out) >= most:
            break
        value = kv.value
        text = value.string_value  # one upb read for the common case; "" also when unset or not a string
        if not text:
            text = str(value.int_value) if value.WhichOneof("value") == "int_value" else any_value_to_str(value)
        if len(text) > cap:
            text = text[:cap] + TRUNCATION_MARKER
        key = kv.key
        if len(key) > MAX_KEY_LENGTH:
            key = key[:MAX_KEY_LENGTH] + TRUNCATION_MARKER
        out[key] = text
    return out


def truncated(text: str, cap: int) -> str:
    """``text`` within the value limit, ending with the marker when it was cut."""
    return text[:cap] + TRUNCATION_MARKER if len(text) > cap else text


def _first(attrs: dict[str, str], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = attrs.get(key)
        if value:
            return value
    return None


def _untruncated(kvs: Any, attrs: dict[str, str]) -> str:
    """The whole text of the raw tool arguments that ``attrs`` holds truncated (``kvs``: the
    OTLP key-values, or a map of whole texts)."""
    key = next(key for key in _TOOL_ARGS_KEYS if attrs.get(key))
    if isinstance(kvs, dict):
        return str(kvs.get(key, attrs[key]))
    for kv in kvs:
        if kv.key == key:
            return any_value_to_str(kv.value)
    return attrs[key]


def _int(value: str | None, bound: int = 2**63) -> int | None:
    """An integer attribute, ``None`` when missing, malformed, not a whole number or outside
    ``[-bound, bound)`` (a double holding a whole number, ``120.0``, is one).

    Example:
        >>> _int("120"), _int("120.0"), _int("1e3"), _int("12.7"), _int("nan")
        (120, 120, 1000, None, None)
    """
    if not value:
        return None
    try:
        number = int(value)
    except ValueError:
        try:
            real = float(value)
        except ValueError:
            return None
        if not real.is_integer():  # 12.7 tokens is no count: missing, not 12 (nan and inf included)
            return None
        number = int(real)
    return number if -bound <= number < bound else None


MAX_TOKENS = 2**32  # per call; sums over a run's calls then stay far inside the BIGINT columns


def _tokens(value: str | None) -> int | None:
    """A token count, ``None`` when missing, malformed, negative or not below :data:`MAX_TOKENS`
    (the raw attribute stays in ``SpanAttributes``).

    Example:
        >>> _tokens("120"), _tokens("-3"), _tokens(str(5 * 10**18))
        (120, None, None)
    """
    number = _int(value, MAX_TOKENS)
    return number if number is not None and number >= 0 else None


def _feature_columns(f: CallFeatures | None) -> tuple[Any, ...]:
    """The stored argument-feature columns of a call's features (all ``None`` without them)."""
    if f is None:
        return _NO_FEATURES
    t = f.text
    if t is None:
        return (f.frame, None, None, None, None, None)
    return (f.frame, t.fp, t.words, t.ents, t.vec, t.norm if t.vec is not None else None)


def _one_call(arguments: str, value: Any) -> CallFeatures | None:
    try:
        return calls_features([arguments], values=[value])[0]
    except Exception:  # pragma: no cover - a defect in the feature rules; the span is kept without them
        return None


_failed_rules: set[str] = set()


def read_or_reason(batch: CallBatch | None, read: Callable[..., SpanRow], *args: Any) -> SpanRow | str:
    """``read(*args)`` (:func:`span_row`, :func:`agent_row`), or the reason its span is rejected
    when a rule fails on it: a defect in one producer's rules costs that span, never the request
    (the sender is told, in ``partial_success``). The first failure of each kind is logged with
    its traceback.

    Example:
        >>> read_or_reason(None, lambda: 1 / 0)
        'span could not be read: ZeroDivisionError'
    """
    calls = len(batch.calls) if batch is not None else 0
    try:
        return read(*args)
    except Exception as exc:
        if batch is not None:
            del batch.calls[calls:]  # the failed span's call, if it was added, has no row
        kind = type(exc).__name__
        if kind not in _failed_rules:
            _failed_rules.add(kind)
            log.exception("a span could not be read and is rejected (the rest of its request is kept)")
        return f"span could not be read: {kind}"


class CallBatch:
    """The tool calls of one request whose args hashes and argument features are computed
    together (:func:`loopsight.ingest.features.calls_features`), each argument text parsed once.

    :func:`agent_row` given a batch leaves a tool row's args hash and features to it
    (:meth:`add`, at :attr:`position`); :meth:`fill` then computes them all and puts them in the
    rows. Judging a call is never worth losing its span: should the feature rules fail on the
    batch, each call is tried alone, and a call they cannot read is kept without its features.

    Example:
        >>> batch = CallBatch()
        >>> row = agent_row("01" * 16, "02" * 8, "", 0, 5, "", "execute_tool search", "Internal", "Unset", "",
        ...                 {"gen_ai.tool.call.arguments": '{"q": "x"}'}, {}, "", "", [], [], Limits(), batch=batch)
        >>> rows = [row]
        >>> row.args_hash is None and batch.fill(rows) is None
        True
        >>> alone = agent_row("01" * 16, "02" * 8, "", 0, 5, "", "execute_tool search", "Internal", "Unset", "",
        ...                   {"gen_ai.tool.call.arguments": '{"q": "x"}'}, {}, "", "", [], [], Limits())
        >>> rows[0] == alone
        True
    """

    def __init__(self) -> None:
        self.position = 0
        """Where the row :func:`agent_row` makes next stands in the rows given to :meth:`fill`."""
        self.calls: list[tuple[int, str, Any, bool]] = []

    def add(self, arguments: str, value: Any, needs_hash: bool) -> None:
        """A call's argument text, its ``json.loads`` (:data:`NOT_JSON`) and whether its args hash is wanted."""
        self.calls.append((self.position, arguments, value, needs_hash))

    def fill(self, rows: list[Any]) -> None:
        """Put every added call's args hash (where wanted) and features in its row of ``rows`` (in place)."""
        if not self.calls:
            return
        texts = [arguments for _, arguments, _, _ in self.calls]
        values = [value for _, _, value, _ in self.calls]
        try:
            found: list[CallFeatures | None] = list(calls_features(texts, values=values))
        except Exception:  # pragma: no cover - a defect in the feature rules: each call alone
            found = [_one_call(t, v) for t, v in zip(texts, values, strict=True)]
        for (at, arguments, value, needs_hash), f in zip(self.calls, found, strict=True):
            row = rows[at]
            args_hash = _args_hash(arguments, value) if needs_hash else row[_ARGS_HASH]
            rows[at] = _new_row(
                SpanRow, (*row[:_ARGS_HASH], args_hash, *row[_ARGS_HASH + 1 : _FEATURES], *_feature_columns(f))
            )
        self.calls.clear()


def args_hash_of_text(text: str) -> str:
    """The args hash of raw argument text: the instrumentation's hash of the parsed JSON (the
    same canonical form), or of the text itself when it is not JSON.

    Example:
        >>> args_hash_of_text('{"b": 1, "a": 2}') == args_hash({"a": 2, "b": 1})
        True
    """
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = NOT_JSON
    return _args_hash(text, value)


def _args_hash(text: str, value: Any) -> str:
    """:func:`args_hash_of_text` of text whose ``json.loads`` is ``value`` (:data:`NOT_JSON`)."""
    if value is NOT_JSON:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return args_hash(value)


error_class_for = V.error_class_for


def _langfuse_usage(attrs: dict[str, str]) -> tuple[int | None, int | None, int | None, int | None]:
    """Input, output, cached and cache-write input tokens of Langfuse's ``usage_details`` (either
    key set), the input counting the cache tokens (:data:`loopsight.vocabulary.CACHE_CONVENTION`)."""
    raw = attrs.get(V.LANGFUSE_USAGE)
    if not raw:
        return None, None, None, None
    try:
        usage = json.loads(raw)
    except (ValueError, RecursionError):
        return None, None, None, None
    if not isinstance(usage, dict):
        return None, None, None, None

    def pick(keys: tuple[str, ...]) -> tuple[str | None, int | None]:
        for key in keys:
            value: Any = usage
            for part in key.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if value is not None:
                return key, _tokens(str(value))
        return None, None

    keys = V.LANGFUSE_USAGE_KEYS
    input_key, input_tokens = pick(keys["input"])
    read_key, cache_read = pick(keys["cache_read"])
    _, cache_write = pick(keys["cache_write"])
    # Langfuse's own ``input`` and Anthropic's ``input_tokens`` leave the cache out; OpenAI's counts include it.
    if input_tokens is not None and (input_key == "input" or read_key not in V.LANGFUSE_INCLUDED_CACHE_KEYS):
        total = input_tokens + (cache_read or 0) + (cache_write or 0)
        input_tokens = total if total < MAX_TOKENS else input_tokens
    return input_tokens, pick(keys["output"])[1], cache_read, cache_write


def _with_cache(input_tokens: int | None, cache_read: int | None, cache_write: int | None) -> int | None:
    """The input count with the cache counts in it: a producer whose input is below them counted
    them apart (:data:`loopsight.vocabulary.CACHE_CONVENTION`)."""
    cached = (cache_read or 0) + (cache_write or 0)
    if cached and (input_tokens is None or input_tokens < cached):
        total = (input_tokens or 0) + cached
        return total if total < MAX_TOKENS else input_tokens
    return input_tokens


class SpanRow(NamedTuple):
    """One stored row, fields in ``spans`` column order; times are Unix nanoseconds."""

    Timestamp: int
    TraceId: str
    SpanId: str
    ParentSpanId: str
    TraceState: str
    SpanName: str
    SpanKind: str
    ServiceName: str
    ResourceAttributes: dict[str, str]
    ScopeName: str
    ScopeVersion: str
    SpanAttributes: dict[str, str]
    Duration: int
    StatusCode: str
    StatusMessage: str
    Events: list[tuple[int, str, dict[str, str]]]
    Links: list[tuple[str, str, str, dict[str, str]]]
    span_type: str
    operation: str | None
    agent: str | None
    run_id: str | None
    step: int | None
    tool: str | None
    args_hash: str | None
    model: str | None
    error_type: str | None
    error_class: str | None
    input_tokens: int | None
    output_tokens: int | None
    termination_reason: str | None
    fallback: str | None
    loop_kind: str | None
    attempts: int | None
    end_time: int
    session_id: str | None
    provider: str | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    result_hash: str | None
    args_frame: int | None
    args_text_fp: int | None
    args_words: tuple[int, ...] | None
    args_ents: tuple[int, ...] | None
    args_vec: Any
    args_vec_norm: float | None


_new_row = tuple.__new__  # SpanRow(*values) without the Python-level __new__ (hot path)
_ARGS_HASH = SpanRow._fields.index("args_hash")
_FEATURES = SpanRow._fields.index("args_frame")  # the argument features: the last columns
assert len(SpanRow._fields) == _FEATURES + len(_NO_FEATURES)


def normalize_span(
    span: trace_pb2.Span,
    resource: dict[str, str],
    scope_name: str,
    scope_version: str,
    limits: Limits,
) -> SpanRow:
    """Turn one OTLP span into a stored row."""
    return span_row(
        span,
        span.trace_id,
        span.span_id,
        span.parent_span_id,
        span.start_time_unix_nano,
        resource,
        scope_name,
        scope_version,
        limits,
    )


def span_row(
    span: trace_pb2.Span,
    trace_id: bytes,
    span_id: bytes,
    parent_span_id: bytes,
    start_ns: int,
    resource: dict[str, str],
    scope_name: str,
    scope_version: str,
    limits: Limits,
    batch: CallBatch | None = None,
) -> SpanRow:
    """:func:`normalize_span` for a caller that already read the span's ids and start time
    (each read of a protobuf field costs a wrapper, so the hot path reads every field once);
    ``batch`` as for :func:`agent_row`.

    Example:
        >>> span = trace_pb2.Span(trace_id=b"\\x01" * 16, span_id=b"\\x02" * 8, name="chat gpt-4o")
        >>> span_row(span, span.trace_id, span.span_id, b"", 0, {}, "", "", Limits()) == normalize_span(span, {}, "", "", Limits())
        True
    """
    attrs = attributes_to_dict(span.attributes, limits)
    cap = limits.max_attribute_length
    if span.HasField("status"):
        span_status = span.status
        status_code: int = span_status.code
        status_message = span_status.message
    else:
        status_code, status_message = 0, ""
    events: list[tuple[int, str, dict[str, str]]] = []
    span_events = span.events
    if span_events:
        for event in span_events[: limits.max_events]:
            events.append(
                (
                    min(event.time_unix_nano, MAX_NANOS),
                    truncated(event.name, cap),
                    attributes_to_dict(event.attributes, limits),
                )
            )
    span_links = span.links
    links = (
        [
            (
                truncated(link.trace_id[:cap].hex(), cap),  # ids of any length come: bounded as values are
                truncated(link.span_id[:cap].hex(), cap),
                truncated(link.trace_state, cap),
                attributes_to_dict(link.attributes, limits),
            )
            for link in span_links[: limits.max_events]
        ]
        if span_links
        else []
    )
    span_kind = span.kind
    return agent_row(
        trace_id.hex(),
        span_id.hex(),
        parent_span_id.hex(),
        start_ns,
        span.end_time_unix_nano,
        truncated(span.trace_state, cap),
        truncated(span.name, cap),
        SPAN_KINDS[span_kind] if 0 <= span_kind < 6 else "Unspecified",
        STATUS_CODES[status_code] if 0 <= status_code < 3 else "Unset",
        status_message,
        attrs,
        resource,
        scope_name,
        scope_version,
        events,
        links,
        limits,
        span.attributes,
        batch,
    )


def agent_row(
    trace_id: str,
    span_id: str,
    parent_span_id: str,
    start_ns: int,
    end_ns: int,
    trace_state: str,
    name: str,
    span_kind: str,
    status: str,
    status_message: str,
    attrs: dict[str, str],
    resource: dict[str, str],
    scope_name: str,
    scope_version: str,
    events: list[tuple[int, str, dict[str, str]]],
    links: list[tuple[str, str, str, dict[str, str]]],
    limits: Limits,
    raw_attributes: Any = None,
    batch: CallBatch | None = None,
) -> SpanRow:
    """The stored row of a span whose fields are read already (attributes as strings within the
    limits, names cut): every agent column by the vocabulary's rules, content dropped or redacted,
    messages redacted. ``raw_attributes`` (the OTLP key-values) give back arguments longer than
    the value limit: differing past the cut, they are not a loop. With ``batch`` a tool call's
    args hash and argument features are left to it (:class:`CallBatch`), else computed here.

    Example:
        >>> row = agent_row("01" * 16, "02" * 8, "", 0, 5, "", "execute_tool search", "Internal", "Unset", "",
        ...                 {"gen_ai.tool.call.arguments": '{"q": "x"}'}, {}, "", "", [], [], Limits())
        >>> row.tool, row.args_hash, "gen_ai.tool.call.arguments" in row.SpanAttributes
        ('search', 'a69fbbcf7209c6f6', False)
    """
    get = attrs.get
    cap = limits.max_attribute_length
    kind = span_type(attrs, name)
    if status_message:  # redacted before the cut (a secret cut at the limit would survive in part), on a bounded head
        status_message, cut = redact_head(status_message, cap, redactor=redact_message)
        if cut:
            status_message += TRUNCATION_MARKER

    exception_type = None
    signals: list[str] = []  # what may say a framework's limit stopped the run (agent spans)
    event_args = None
    for _, event_name, event_attrs in events:
        if event_name == "exception":
            if exception_type is None:
                exception_type = event_attrs.get("exception.type")
            if kind == "agent":
                signals += (event_attrs.get("exception.type") or "", event_attrs.get("exception.message") or "")
            _redact_exception(event_attrs)
        elif kind == "agent" and event_attrs:
            signals += _finish_reasons(event_attrs)  # Strands' limit_turns, before content is dropped
        elif kind == "tool" and event_name == V.TOOL_MESSAGE_EVENT and event_args is None:
            event_args = event_attrs.get("content")  # Strands' default attributes: the arguments are here only
        guard_content(event_attrs, limits.capture_content, _EVENT_CONTENT_KEYS)

    tool = args_hash = model = provider = result = alone = None
    input_tokens = output_tokens = cache_read = cache_write = None
    if kind == "tool":
        tool = (
            _first(attrs, _TOOL_NAME_KEYS)
            or get(V.TRACELOOP_ENTITY_NAME)
            or (name[len("execute_tool ") :] if name.startswith("execute_tool ") else name)
        )
        args_hash = get(A.TOOL_ARGS_HASH)
        raw_args = _first(attrs, _TOOL_ARGS_KEYS) or event_args
        if raw_args is not None:
            if raw_attributes is not None and len(raw_args) > cap and raw_args.endswith(TRUNCATION_MARKER):
                raw_args = _untruncated(raw_attributes, attrs)  # arguments differing past the cut are not a loop
            arguments, value = parsed_call_arguments(raw_args)
            if batch is None:
                alone = batch = CallBatch()
            batch.add(arguments, value, not args_hash)
        result = get(A.TOOL_RESULT_HASH) or hash_result(_whole(raw_attributes, attrs, _TOOL_RESULT_KEYS) or None)
    elif kind == "llm":
        model = _first(attrs, _MODEL_KEYS)
        provider = _first(attrs, _PROVIDER_KEYS)
        input_tokens = _tokens(_first(attrs, _INPUT_TOKEN_KEYS))
        output_tokens = _tokens(_first(attrs, _OUTPUT_TOKEN_KEYS))
        cache_read = _tokens(_first(attrs, _CACHE_READ_KEYS))
        cache_write = _tokens(_first(attrs, _CACHE_WRITE_KEYS))
        if input_tokens is None and output_tokens is None:
            input_tokens, output_tokens, langfuse_read, langfuse_write = _langfuse_usage(attrs)
            cache_read = cache_read if cache_read is not None else langfuse_read
            cache_write = cache_write if cache_write is not None else langfuse_write
        if cache_read or cache_write:
            input_tokens = _with_cache(input_tokens, cache_read, cache_write)
    agent = get(_AGENT_KEYS[0]) or get(_AGENT_KEYS[1]) or get(_AGENT_KEYS[2]) or None
    if agent is None and kind == "other" and scope_name.endswith("llama_index"):
        agent = _named_in_input(attrs)  # LlamaIndex names its agent only in the workflow's steps
    termination = None
    if kind == "agent":
        if not agent:
            agent = _agent_name(attrs, name)
        termination = get(A.TERMINATION_REASON)
        _budget(attrs)
        signals.append(_whole(raw_attributes, attrs, _OUTPUT_KEYS))
    session_id = _first(attrs, _SESSION_KEYS)
    guard_content(attrs, limits.capture_content)
    if V.LANGFUSE_STATUS_MESSAGE in attrs:  # Langfuse's status message: redacted as every status message is
        attrs[V.LANGFUSE_STATUS_MESSAGE] = redact_message(attrs[V.LANGFUSE_STATUS_MESSAGE])
    for key in V.REDACTED_RESOURCE_KEYS:  # a command line's --api-key sk-...: redacted whatever the capture
        if resource.get(key):
            resource[key] = redact_message(resource[key])

    is_error = status == "Error" or get(V.LANGFUSE_LEVEL) == "ERROR"
    error_type: str | None = None
    error_class: str | None
    if is_error:
        status = "Error"  # Langfuse marks a failure by level, not status: counted as one everywhere
        error_type = get(A.ERROR_TYPE) or exception_type or status_message or get(V.LANGFUSE_STATUS_MESSAGE) or "error"
        error_class = get(A.ERROR_CLASS) or error_class_for(error_type)
    else:
        error_class = get(A.ERROR_CLASS)
    if kind == "agent" and termination is None:
        # Unset when nothing says: the run's reason is decided over its agent spans (stores/sql/derive_runs.sql).
        termination = V.termination_signal(error_type, status_message, *signals)

    if end_ns > MAX_NANOS:
        end_ns = MAX_NANOS
    if end_ns < start_ns:
        end_ns = start_ns
    step = get(A.STEP)
    attempts = get(A.TOOL_ATTEMPTS)
    row = _new_row(
        SpanRow,
        (
            start_ns,
            trace_id,
            span_id,
            parent_span_id,
            trace_state,
            name,
            span_kind,
            resource.get("service.name", ""),
            resource,
            scope_name,
            scope_version,
            attrs,
            end_ns - start_ns,
            status,
            status_message,
            events,
            links,
            kind,
            get(A.OPERATION_NAME),
            agent,
            None,
            _int(step, 2**31) if step is not None else None,
            tool,
            args_hash,
            model,
            error_type,
            error_class,
            input_tokens,
            output_tokens,
            termination,
            get(A.FALLBACK),
            get(A.LOOP_KIND),
            _int(attempts, 2**31) if attempts is not None else None,
            end_ns,
            session_id,
            provider,
            cache_read,
            cache_write,
            result,
            *_NO_FEATURES,
        ),
    )
    if alone is not None:
        rows = [row]
        alone.fill(rows)
        return rows[0]
    return row
