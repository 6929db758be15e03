"""Handles on open spans: what ``with loopsight.agent/llm/tool(...) as h`` yields.

A handle owns one span. Every method is safe to call at any time: on a finished span or
with tracing off it does nothing, and a failure inside loopsight is logged once and
swallowed, never raised into the application. A wrong argument is the caller's error: every
method checks its arguments first (:mod:`loopsight.checks`) and refuses one with a
``TypeError`` / ``ValueError`` naming the parameter, whatever the span's state.
"""

from __future__ import annotations

import contextvars
import sys
import traceback
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from loopsight import attributes as A
from loopsight import checks, config
from loopsight.hashing import canonical_json
from loopsight.results import result_hash

from .content import SETTINGS as CONTENT
from .content import clean_text, clean_value, redact_head, render
from .errors import classify, error_of
from .nesting import OPEN_LLM
from .state import STATE, internal_error
from .tokens import Usage, coerce_usage, extract_usage

_RUN: contextvars.ContextVar[RunHandle | None] = contextvars.ContextVar("loopsight_run", default=None)
_CALL: contextvars.ContextVar[SpanHandle | None] = contextvars.ContextVar("loopsight_call", default=None)


def _bounded(text: str) -> str:
    """Exception text as the collector keeps it by default (its first 8,192 characters), cut before
    it is redacted: a 10 MB message costs the agent what its head costs; lone surrogates as U+FFFD."""
    limit = config.DEFAULT_MAX_ATTRIBUTE_LENGTH - len(config.TRUNCATION_MARKER)
    head, cut = redact_head(text, limit)
    return clean_text(head + config.TRUNCATION_MARKER if cut else head)


def _check_error(error: Any) -> None:
    """``error`` of ``retry`` / ``fail``: an exception or a non-empty ``error.type`` string."""
    checks.instance("error", error, (BaseException, str), hint=" (an exception or an error.type string)")
    if isinstance(error, str):
        checks.text("error", error, empty=False)


def _is_cancel(exc: BaseException) -> bool:
    # asyncio is not imported just for this: without asyncio loaded no CancelledError exists.
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        return True
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)


_INVALID = trace.INVALID_SPAN
SILENT_KINDS = ("empty_result", "garbage")


class SpanHandle:
    """Common part of run, model-call and tool-call handles."""

    __slots__ = ("_ended", "_failed", "_tokens", "span")

    def __init__(self, span: Any) -> None:
        self.span = span
        self._tokens: list[Any] = []
        self._ended = False
        self._failed = False

    @property
    def recording(self) -> bool:
        """True when this handle writes to a real span (tracing on and span still open)."""
        return not self._ended and self.span is not _INVALID

    def set_attribute(self, key: str, value: Any) -> None:
        """Set one span attribute (any OTel attribute value); ``key`` is a non-empty str.

        Example:
            >>> with loopsight.llm(model="gpt-4o") as call:   # doctest: +SKIP
            ...     call.set_attribute("loopsight.context.mode", "compact")
        """
        checks.text("key", key, empty=False)
        try:
            if not self._ended:
                self.span.set_attribute(clean_text(key), clean_value(value))
        except Exception as exc:
            internal_error("set_attribute", exc)

    def _fail(self, error_type: str, error_class: str | None) -> None:
        self._failed = True
        error_type = clean_text(error_type)
        span = self.span
        span.set_status(Status(StatusCode.ERROR, error_type))
        span.set_attribute(A.ERROR_TYPE, error_type)
        if error_class is not None:
            span.set_attribute(A.ERROR_CLASS, error_class)

    # -- lifecycle (used by the decorators and context managers) -----------------------
    def _attach(self) -> None:
        if self.span is _INVALID:
            self._tokens.append(None)
            return
        self._tokens.append((otel_context.attach(trace.set_span_in_context(self.span)), self._set_var()))

    def _set_var(self) -> Any:
        return _CALL.set(self)

    def _reset_var(self, token: Any) -> None:
        _CALL.reset(token)

    def _detach(self) -> None:
        tokens = self._tokens
        if not tokens:  # inert handle: never attached
            return
        try:
            pair = tokens.pop()
            if pair is not None:
                ctx_token, var_token = pair
                self._reset_var(var_token)
                otel_context.detach(ctx_token)
        except Exception as exc:
            internal_error("detach", exc)

    def _exit(self, exc: BaseException | None, result: Any = None, has_result: bool = False) -> None:
        """Detach, then end the span with the outcome; never raises."""
        self._detach()
        self._finish(exc, result, has_result)

    def _finish(self, exc: BaseException | None, result: Any = None, has_result: bool = False) -> None:
        if self._ended:
            return
        if self.span is _INVALID:
            self._ended = True
            return
        try:
            if exc is not None and not isinstance(exc, GeneratorExit):
                self._on_error(exc)
            elif has_result:
                self._on_result(result)
        except Exception as err:
            internal_error("finish: outcome", err)
        try:
            self._before_end(exc)
        except Exception as err:
            internal_error("finish: attributes", err)
        self._ended = True
        try:
            self.span.end(end_time=STATE.clock())
        except Exception as err:
            internal_error("finish: end", err)

    def _on_error(self, exc: BaseException) -> None:
        if _is_cancel(exc):
            self._fail("cancelled", "transient")
            return
        error_type, error_class = classify(exc)
        self._fail(error_type, error_class)
        # The SDK's own stacktrace would repeat the message, and the source lines, unredacted.
        stacktrace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.span.record_exception(
            exc,
            attributes={"exception.message": _bounded(str(exc)), "exception.stacktrace": _bounded(stacktrace)},
            timestamp=STATE.clock(),
            escaped=True,
        )

    def _on_result(self, result: Any) -> None:
        pass

    def _before_end(self, exc: BaseException | None) -> None:
        pass


class RunHandle(SpanHandle):
    """The open ``invoke_agent`` span of an agent run.

    Example:
        >>> with loopsight.agent("order-assistant", max_steps=10) as run:   # doctest: +SKIP
        ...     run.terminate("max_steps", fallback="partial_result")
    """

    __slots__ = ("_current_step", "_next_step", "fallback", "name", "parent", "reason", "root")

    def __init__(self, span: Any, name: str, parent: RunHandle | None) -> None:
        super().__init__(span)
        self.name = name
        self.parent = parent
        self.root: RunHandle = parent.root if parent is not None else self
        self.reason: str | None = None
        self.fallback: str | None = None
        self._next_step = 0
        self._current_step: int | None = None

    @property
    def step(self) -> int:
        """The step the run is at: the last model call's step (0 before the first)."""
        current = self.root._current_step
        return 0 if current is None else current

    @property
    def steps(self) -> int:
        """How many steps the run has started so far: its model calls, less those made inside
        another model call or a tool (they are part of that step)."""
        return self.root._next_step

    def terminate(self, reason: str, fallback: str | None = None) -> None:
        """Record why the run ends (``loopsight.termination.reason``) and its fallback.

        ``reason`` is one of ``completed max_steps max_tool_calls timeout token_budget
        loop_detected repeated_error fatal_error cancelled error``; ``fallback`` one of
        ``clarify retry_later permission partial_result``. The last call wins. Another value is a
        ``ValueError`` listing the allowed ones.
        """
        checks.one_of("reason", reason, A.TERMINATION_REASONS)
        checks.one_of("fallback", fallback, A.FALLBACKS, optional=True)
        try:
            self.reason = str(reason)
            if fallback is not None:
                self.fallback = str(fallback)
        except Exception as exc:
            internal_error("terminate", exc)

    def _take_step(self, explicit: int | None) -> int:
        root = self.root
        step = root._next_step if explicit is None else explicit
        if step >= root._next_step:
            root._next_step = step + 1
        root._current_step = step
        return step

    def _set_var(self) -> Any:
        return _RUN.set(self)

    def _reset_var(self, token: Any) -> None:
        _RUN.reset(token)

    def _on_error(self, exc: BaseException) -> None:
        if _is_cancel(exc):
            self._fail("cancelled", None)
            if self.reason is None:
                self.reason = "cancelled"
            return
        super()._on_error(exc)
        if self.reason is None:
            self.reason = "error"

    def _before_end(self, exc: BaseException | None) -> None:
        span = self.span
        reason = self.reason or "completed"
        span.set_attribute(A.TERMINATION_REASON, reason)
        if reason != "completed" and not self._failed:
            # the loop gave up (a budget, a fatal tool error) without raising: the run failed all the same
            self._fail(reason, None)
        if self.fallback is not None:
            span.set_attribute(A.FALLBACK, self.fallback)


class LlmHandle(SpanHandle):
    """The open ``chat`` span of one model call.

    Example:
        >>> with loopsight.llm(model="gpt-4o") as call:   # doctest: +SKIP
        ...     response = client.chat.completions.create(...)
        ...     call.record(response)
    """

    __slots__ = (
        "_extract",
        "cache_read_tokens",
        "cache_write_tokens",
        "finish_reasons",
        "input_tokens",
        "model",
        "output_tokens",
        "response_model",
        "run",
        "step",
        "usage_in_child",
    )

    def __init__(
        self, span: Any, model: str | None, step: int | None, extract: Any = None, run: RunHandle | None = None
    ) -> None:
        super().__init__(span)
        self.model = model
        self.step = step
        self.run = run
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.cache_read_tokens: int | None = None
        self.cache_write_tokens: int | None = None
        self.finish_reasons: list[str] = []
        self.response_model: str | None = None
        self.usage_in_child = False
        self._extract = extract
        if span is not _INVALID:
            OPEN_LLM[span.get_span_context().span_id] = self

    def record(self, response: Any) -> None:
        """Read tokens, finish reasons and model from a response object or dict.

        Several calls merge (streaming chunks): the last count seen wins, finish reasons
        accumulate. With content capture on, the response is recorded as output messages.
        """
        try:
            if self._ended:
                return
            if self._extract is not None:
                usage = coerce_usage(self._extract(response))
            else:
                usage = extract_usage(response)
            if usage is not None:
                self._merge(usage)
            if CONTENT.enabled:
                self.span.set_attribute(A.OUTPUT_MESSAGES, render(response))
        except Exception as exc:
            internal_error("llm.record", exc)

    def set_usage(
        self,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        finish_reasons: list[str] | tuple[str, ...] | None = None,
        *,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
    ) -> None:
        """Set token counts (and finish reasons) directly; ``None`` leaves a value as is.

        ``input_tokens`` includes ``cache_read_tokens`` (served from the provider's prompt cache)
        and ``cache_write_tokens`` (written to it), as OpenTelemetry GenAI counts them. A count
        that is not an int >= 0, or finish reasons that are not a list of str, are a
        ``TypeError`` / ``ValueError``.
        """
        reasons = () if finish_reasons is None else tuple(checks.each("finish_reasons", finish_reasons, checks.text))
        usage = Usage(
            input_tokens,
            output_tokens,
            reasons,
            cache_read_tokens=cache_read_tokens,
            cache_write_tokens=cache_write_tokens,
        )
        try:
            self._merge(usage)
        except Exception as exc:
            internal_error("llm.set_usage", exc)

    def _merge(self, usage: Usage) -> None:
        if usage.input_tokens is not None:
            self.input_tokens = usage.input_tokens
        if usage.output_tokens is not None:
            self.output_tokens = usage.output_tokens
        if usage.cache_read_tokens is not None:
            self.cache_read_tokens = usage.cache_read_tokens
        if usage.cache_write_tokens is not None:
            self.cache_write_tokens = usage.cache_write_tokens
        for reason in usage.finish_reasons:
            if reason not in self.finish_reasons:
                self.finish_reasons.append(reason)
        if usage.response_model and self.response_model is None:
            self.response_model = usage.response_model

    def _observe(self, chunk: Any) -> None:
        if self._extract is not None:
            usage = coerce_usage(self._extract(chunk))
        else:
            usage = extract_usage(chunk)
        if usage is not None:
            self._merge(usage)

    def _on_result(self, result: Any) -> None:
        self.record(result)

    def _before_end(self, exc: BaseException | None) -> None:
        span = self.span
        OPEN_LLM.pop(span.get_span_context().span_id, None)
        if self.usage_in_child:
            span.set_attribute(A.USAGE_IN_CHILD, True)
        else:
            if self.input_tokens is not None:
                span.set_attribute(A.USAGE_INPUT_TOKENS, self.input_tokens)
            if self.output_tokens is not None:
                span.set_attribute(A.USAGE_OUTPUT_TOKENS, self.output_tokens)
            if self.cache_read_tokens is not None:
                span.set_attribute(A.USAGE_CACHE_READ_INPUT_TOKENS, self.cache_read_tokens)
            if self.cache_write_tokens is not None:
                span.set_attribute(A.USAGE_CACHE_CREATION_INPUT_TOKENS, self.cache_write_tokens)
        if self.finish_reasons:
            span.set_attribute(A.RESPONSE_FINISH_REASONS, clean_value(tuple(self.finish_reasons)))
        if self.response_model is not None:
            model = clean_text(self.response_model)
            span.set_attribute(A.RESPONSE_MODEL, model)
            if self.model is None:
                span.update_name(f"{A.OP_CHAT} {model}")


class ToolHandle(SpanHandle):
    """The open ``execute_tool`` span of one tool call.

    Example:
        >>> with loopsight.tool("search", args={"q": "x"}) as t:   # doctest: +SKIP
        ...     try:
        ...         hits = search("x")
        ...     except TimeoutError as exc:
        ...         t.retry(exc, backoff_ms=200)
        ...         hits = search("x")
        ...     if not hits:
        ...         t.mark("empty_result")
    """

    __slots__ = ("_check", "attempts", "name", "run", "step")

    def __init__(
        self,
        span: Any,
        name: str,
        step: int | None,
        attempts: int = 1,
        check: Any = None,
        run: RunHandle | None = None,
    ) -> None:
        super().__init__(span)
        self.name = name
        self.step = step
        self.run = run
        self.attempts = attempts
        self._check = check

    def retry(
        self, error: BaseException | str, backoff_ms: float | None = None, error_class: str | None = None
    ) -> None:
        """Record a failed attempt that will be retried: a ``retry`` event, attempts += 1.

        ``error`` is the exception (classified) or an ``error.type`` string (class
        ``transient`` unless given). Without ``backoff_ms``, a ``retry_after`` (seconds) on
        loopsight's own errors is used. Another ``error`` (``None``, a number, ``""``) is a
        ``TypeError`` / ``ValueError``, as is a negative ``backoff_ms`` or an unknown class.
        """
        _check_error(error)
        checks.non_negative_number("backoff_ms", backoff_ms, optional=True)
        checks.one_of("error_class", error_class, A.ERROR_CLASSES, optional=True)
        try:
            if self._ended:
                return
            error_type, eclass = error_of(error, error_class, default_class="transient")
            if backoff_ms is None:
                retry_after = getattr(error, "retry_after", None)
                if isinstance(retry_after, (int, float)):
                    backoff_ms = retry_after * 1000.0
            attrs: dict[str, Any] = {A.ERROR_TYPE: clean_text(error_type), A.ERROR_CLASS: eclass}
            if backoff_ms is not None:
                attrs[A.BACKOFF_MS] = float(backoff_ms)
            self.attempts += 1
            span = self.span
            span.add_event(A.EVENT_RETRY, attrs, timestamp=STATE.clock())
            span.set_attribute(A.TOOL_ATTEMPTS, self.attempts)
        except Exception as exc:
            internal_error("tool.retry", exc)

    def loop_detected(self, kind: str, similarity: float | None = None) -> None:
        """Mark this call as where a loop guard fired (``exact`` ``oscillation``
        ``repeated_error`` ``semantic``): sets ``loopsight.loop.kind`` and adds a
        ``loop_detected`` event. ``similarity`` (for ``semantic``) is a number >= 0; another
        kind or similarity is a ``ValueError`` / ``TypeError``."""
        checks.one_of("kind", kind, A.LOOP_KINDS)
        similarity = checks.non_negative_number("similarity", similarity, optional=True)
        try:
            if self._ended:
                return
            attrs: dict[str, Any] = {A.LOOP_KIND: str(kind)}
            if similarity is not None:
                attrs[A.LOOP_SIMILARITY] = similarity
            self.span.set_attributes(attrs)
            self.span.add_event(A.EVENT_LOOP_DETECTED, attrs, timestamp=STATE.clock())
        except Exception as exc:
            internal_error("tool.loop_detected", exc)

    def fail(self, error: BaseException | str, error_class: str | None = None) -> None:
        """Mark the call failed without raising: status ERROR, ``error.type``, class.

        ``error`` is the exception (classified) or an ``error.type`` string; anything else is a
        ``TypeError`` / ``ValueError``, as is an unknown ``error_class``."""
        _check_error(error)
        checks.one_of("error_class", error_class, A.ERROR_CLASSES, optional=True)
        try:
            if not self._ended:
                self._fail(*error_of(error, error_class))
        except Exception as exc:
            internal_error("tool.fail", exc)

    def mark(self, kind: str) -> None:
        """Mark a silent failure: ``empty_result`` or ``garbage`` (status ERROR); another kind is a
        ``ValueError``."""
        checks.one_of("kind", kind, SILENT_KINDS)
        try:
            if self._ended:
                return
            self._fail(str(kind), str(kind) if kind in A.ERROR_CLASSES else None)
        except Exception as exc:
            internal_error("tool.mark", exc)

    def set_result(self, value: Any) -> None:
        """Record the result's hash (``loopsight.tool.result_hash``: what ``no_progress`` loops
        compare) and, only with content capture on, the result (redacted and truncated)."""
        try:
            if not self._ended:
                self._record_result(value)
        except Exception as exc:
            internal_error("tool.set_result", exc)

    def _record_result(self, value: Any) -> None:
        digest = result_hash(value if isinstance(value, str) else canonical_json(value))
        if digest is not None:
            self.span.set_attribute(A.TOOL_RESULT_HASH, digest)
        if CONTENT.enabled:
            self.span.set_attribute(A.TOOL_CALL_RESULT, render(value))

    def _on_result(self, result: Any) -> None:
        try:
            self._record_result(result)
        except Exception as exc:
            internal_error("tool.result", exc)
        if self._check is not None and not self._failed:
            verdict = self._check(result)
            if verdict:
                self.mark(verdict)


def current_run() -> RunHandle | None:
    """The innermost agent run in progress here, or ``None`` outside any run.

    With tracing off (``LOOPSIGHT_DISABLED=1`` or no TracerProvider) it returns an inert
    handle instead of ``None``, so code such as ``current_run().terminate(...)`` keeps
    working unchanged.

    Example:
        >>> @loopsight.agent               # doctest: +SKIP
        ... def answer(q):
        ...     loopsight.current_run().terminate("max_steps")
    """
    run = _RUN.get()
    if run is None and (STATE.disabled or STATE.tracer() is None):
        return RunHandle(_INVALID, "", None)
    return run


def current_step() -> int | None:
    """The step a tool call made here would get (last model call's step, 0 before it);
    ``None`` outside a run."""
    run = _RUN.get()
    return None if run is None else run.step


def current_tool() -> ToolHandle | None:
    """The tool call in progress here (e.g. inside a ``@loopsight.tool`` function)."""
    call = _CALL.get()
    return call if isinstance(call, ToolHandle) else None


def current_llm() -> LlmHandle | None:
    """The model call in progress here (e.g. inside a ``@loopsight.llm`` function)."""
    call = _CALL.get()
    return call if isinstance(call, LlmHandle) else None
