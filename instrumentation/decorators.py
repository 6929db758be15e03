"""``agent``, ``llm`` and ``tool``: decorators and context managers that open spans.

Each works bare (``@loopsight.tool``), parameterised (``@loopsight.tool(name="search")``)
and as a context manager (``with loopsight.tool("search", args=...) as t``, also
``async with``), on sync, async, generator and async-generator functions, methods,
static/class methods and ``functools.partial`` objects.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Generic, Literal, TypeVar, overload

from opentelemetry.trace import SpanKind

from loopsight import attributes as A
from loopsight import checks
from loopsight.hashing import args_hash

from .content import SETTINGS as CONTENT
from .content import clean_text, render
from .handles import _CALL, _INVALID, _RUN, LlmHandle, RunHandle, SpanHandle, ToolHandle
from .state import STATE, internal_error

F = TypeVar("F", bound=Callable[..., Any])
H = TypeVar("H", bound=SpanHandle)

_INTERNAL = SpanKind.INTERNAL
_CLIENT = SpanKind.CLIENT


def _callable_name(fn: Any) -> str:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return clean_text(getattr(fn, "__name__", None) or type(fn).__name__)


def _text(name: str, value: Any) -> str | None:
    """An optional str argument, checked, as a span can carry it (:func:`clean_text`)."""
    text = checks.text(name, value, optional=True)
    return None if text is None else clean_text(text)


Binder = Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]


def _make_binder(fn: Callable[..., Any]) -> Binder:
    """A fast ``(args, kwargs) -> {name: value}`` for one function (defaults included,
    ``self``/``cls`` left out), built once at decoration time."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return lambda args, kwargs: {"args": list(args), **kwargs} if args else dict(kwargs)
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    skip = 1 if params and params[0].name in ("self", "cls") and params[0].kind in positional else 0
    params = params[skip:]
    names = tuple(p.name for p in params if p.kind in positional)
    var = next((p.name for p in params if p.kind is inspect.Parameter.VAR_POSITIONAL), "args")
    defaults = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
    count = len(names)

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if skip:
            args = args[skip:]
        bound = dict(defaults) if defaults else {}
        if len(args) <= count:
            bound.update(zip(names, args, strict=False))
        else:
            bound.update(zip(names, args[:count], strict=False))
            bound[var] = list(args[count:])
        if kwargs:
            bound.update(kwargs)
        return bound

    return bind


class _Spec(Generic[H]):
    """Both a decorator and a (sync and async) context manager for one span kind."""

    _stack: list[H]

    def _open(
        self,
        tracer: Any,
        args: tuple[Any, ...] | None,
        kwargs: dict[str, Any] | None,
        fn_name: str | None,
        binder: Binder | None,
    ) -> H:  # pragma: no cover - abstract
        raise NotImplementedError

    def _noop(self) -> H:  # pragma: no cover - abstract
        raise NotImplementedError

    def _start(
        self,
        args: tuple[Any, ...] | None,
        kwargs: dict[str, Any] | None,
        fn_name: str | None,
        binder: Binder | None,
        attach: bool = True,
    ) -> H | None:
        """Open (and attach) a span; ``None`` when tracing is off or loopsight failed."""
        try:
            tracer = STATE.tracer()
            if tracer is None:
                return None
            handle = self._open(tracer, args, kwargs, fn_name, binder)
            if attach:
                handle._attach()
            return handle
        except Exception as exc:
            internal_error(f"start {type(self).__name__}", exc)
            return None

    # -- context manager --------------------------------------------------------------
    def __enter__(self) -> H:
        handle = None if STATE.disabled else self._start(None, None, None, None)
        if handle is None:
            handle = self._noop()
        self._stack.append(handle)
        return handle

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Literal[False]:
        stack = self._stack
        if not stack:
            internal_error("__exit__ without __enter__", RuntimeError(type(self).__name__))
            return False
        # The handle current in this context, so one spec object shared by concurrent
        # tasks (async with in asyncio.gather) closes the right span.
        handle = self._current()
        if handle is not None and any(h is handle for h in stack):
            stack[:] = [h for h in stack if h is not handle]
        else:
            handle = stack.pop()
        handle._exit(exc)
        return False

    def _current(self) -> H | None:
        return _CALL.get()  # type: ignore[return-value]

    async def __aenter__(self) -> H:
        return self.__enter__()

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Literal[False]:
        return self.__exit__(exc_type, exc, tb)

    # -- decorator --------------------------------------------------------------------
    def __call__(self, fn: F) -> F:
        if isinstance(fn, (staticmethod, classmethod)):
            return type(fn)(self(fn.__func__))
        if not callable(fn):
            raise TypeError(f"loopsight decorators wrap callables, got {fn!r}")
        return _wrap(self, fn)


def _decorated(first: Any) -> bool:
    """Whether a decorator's first argument is the function it decorates (bare ``@loopsight.tool``),
    a class or static method object included (not callable before Python 3.10/3.12)."""
    return isinstance(first, (staticmethod, classmethod)) or (callable(first) and not isinstance(first, str))


def _wrap(spec: _Spec[Any], fn: Callable[..., Any]) -> Any:
    name = _callable_name(fn)
    binder = _make_binder(fn) if isinstance(spec, (ToolSpec, LlmSpec)) else None
    start = spec._start
    observe = isinstance(spec, LlmSpec)

    if inspect.isasyncgenfunction(fn):

        async def agen_wrapper(*args: Any, **kwargs: Any) -> Any:
            agen = fn(*args, **kwargs)
            # Attached only around each step, so the consumer's context stays its own.
            handle = None if STATE.disabled else start(args, kwargs, name, binder, False)
            to_send: Any = None
            to_throw: BaseException | None = None
            try:
                while True:
                    if handle is not None:
                        handle._attach()
                    try:
                        if to_throw is not None:
                            error, to_throw = to_throw, None
                            item = await agen.athrow(error)
                        else:
                            item = await agen.asend(to_send)
                    except StopAsyncIteration:
                        if handle is not None:
                            handle._exit(None)
                        return
                    finally:
                        if handle is not None and handle._tokens:
                            handle._detach()
                    if observe and handle is not None:
                        _observe(handle, item)
                    try:
                        to_send = yield item
                    except GeneratorExit:
                        if handle is not None:
                            handle._attach()
                        try:
                            await agen.aclose()
                        finally:
                            if handle is not None:
                                handle._detach()
                        raise
                    except BaseException as error:  # thrown in by the consumer
                        to_throw, to_send = error, None
            except BaseException as error:
                if handle is not None:
                    handle._finish(error)
                raise

        wrapper: Any = agen_wrapper
    elif inspect.isgeneratorfunction(fn):

        def gen_wrapper(*args: Any, **kwargs: Any) -> Any:
            gen = fn(*args, **kwargs)
            handle = None if STATE.disabled else start(args, kwargs, name, binder, False)
            to_send: Any = None
            to_throw: BaseException | None = None
            try:
                while True:
                    if handle is not None:
                        handle._attach()
                    try:
                        if to_throw is not None:
                            error, to_throw = to_throw, None
                            item = gen.throw(error)
                        else:
                            item = gen.send(to_send)
                    except StopIteration as stop:
                        if handle is not None:
                            handle._exit(None, stop.value, stop.value is not None)
                        return stop.value
                    finally:
                        if handle is not None and handle._tokens:
                            handle._detach()
                    if observe and handle is not None:
                        _observe(handle, item)
                    try:
                        to_send = yield item
                    except GeneratorExit:
                        if handle is not None:
                            handle._attach()
                        try:
                            gen.close()
                        finally:
                            if handle is not None:
                                handle._detach()
                        raise
                    except BaseException as error:
                        to_throw, to_send = error, None
            except BaseException as error:
                if handle is not None:
                    handle._finish(error)
                raise

        wrapper = gen_wrapper
    elif inspect.iscoroutinefunction(fn):

        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            if STATE.disabled:
                return await fn(*args, **kwargs)
            handle = start(args, kwargs, name, binder)
            if handle is None:
                return await fn(*args, **kwargs)
            try:
                result = await fn(*args, **kwargs)
            except BaseException as error:
                handle._exit(error)
                raise
            if observe and _returned_stream(result, async_=True):
                handle._detach()
                return _ObservedAsyncStream(result, handle)
            handle._exit(None, result, True)
            return result

        wrapper = async_wrapper
    else:

        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            if STATE.disabled:
                return fn(*args, **kwargs)
            handle = start(args, kwargs, name, binder)
            if handle is None:
                return fn(*args, **kwargs)
            try:
                result = fn(*args, **kwargs)
            except BaseException as error:
                handle._exit(error)
                raise
            if observe and _returned_stream(result):
                handle._detach()
                return _ObservedStream(result, handle)
            handle._exit(None, result, True)
            return result

        wrapper = sync_wrapper

    functools.update_wrapper(wrapper, fn)
    if not hasattr(fn, "__name__"):
        wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__loopsight__ = spec
    return wrapper


def _observe(handle: Any, item: Any) -> None:
    try:
        handle._observe(item)
    except Exception as exc:
        internal_error("llm stream chunk", exc)


def _returned_stream(result: Any, async_: bool = False) -> bool:
    """A model call that returned its stream (``create(stream=True)`` of OpenAI, Anthropic, ...):
    an iterator (or async iterator) that is not a plain container."""
    if isinstance(result, (str, bytes, bytearray, dict, list, tuple)):
        return False
    if async_:
        return hasattr(result, "__anext__") and hasattr(result, "__aiter__")
    return hasattr(result, "__next__") and hasattr(result, "__iter__")


class _ObservedStream:
    """A returned stream read through: each chunk's tokens and finish reason are observed, and the
    span ends when the stream is exhausted, fails or is closed (so it lasts the generation)."""

    def __init__(self, stream: Any, handle: Any) -> None:
        self._stream = stream
        self._handle = handle

    def __getattr__(self, name: str) -> Any:
        if name in ("_stream", "_handle"):  # not set (a copy): never look them up through themselves
            raise AttributeError(name)
        return getattr(self._stream, name)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance(stream, openai.Stream) stays true, as for a wrapt proxy
        stream = self.__dict__.get("_stream")
        return type(self) if stream is None else type(stream)

    def __iter__(self) -> _ObservedStream:
        return self

    def __next__(self) -> Any:
        try:
            item = next(self._stream)
        except BaseException as error:
            self._end(error)
            raise
        _observe(self._handle, item)
        return item

    def _end(self, error: BaseException | None) -> None:
        """End the span: the stream ran out (or was closed), or it failed with ``error``."""
        done = error is None or isinstance(error, (StopIteration, StopAsyncIteration))
        self._handle._finish(None if done else error)

    def close(self) -> None:
        try:
            close = getattr(self._stream, "close", None)
            if close is not None:
                close()
        finally:
            self._end(None)

    def __enter__(self) -> _ObservedStream:
        enter = getattr(self._stream, "__enter__", None)
        if enter is not None:
            enter()
        return self

    def __exit__(self, *exc: Any) -> Any:
        try:
            leave = getattr(self._stream, "__exit__", None)
            return leave(*exc) if leave is not None else None
        finally:
            self._end(exc[1] if len(exc) > 1 else None)

    def __del__(self) -> None:  # a stream dropped unread still ends its span
        handle = self.__dict__.get("_handle")
        if handle is not None:
            handle._finish(None)


class _ObservedAsyncStream(_ObservedStream):
    """:class:`_ObservedStream` for an async stream (``async for``, ``async with``)."""

    def __aiter__(self) -> _ObservedAsyncStream:
        return self

    async def __anext__(self) -> Any:
        try:
            item = await self._stream.__anext__()
        except BaseException as error:
            self._end(error)
            raise
        _observe(self._handle, item)
        return item

    async def aclose(self) -> None:
        try:
            close = getattr(self._stream, "close", None) or getattr(self._stream, "aclose", None)
            if close is not None:
                done = close()
                if inspect.isawaitable(done):
                    await done
        finally:
            self._end(None)

    async def __aenter__(self) -> _ObservedAsyncStream:
        enter = getattr(self._stream, "__aenter__", None)
        if enter is not None:
            await enter()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            leave = getattr(self._stream, "__aexit__", None)
            return await leave(*exc) if leave is not None else None
        finally:
            self._end(exc[1] if len(exc) > 1 else None)


# -- agent ----------------------------------------------------------------------------
class AgentSpec(_Spec[RunHandle]):
    """An agent run: span ``invoke_agent {name}``; see :func:`agent`."""

    __slots__ = ("_stack", "budget", "conversation_id", "name")

    def __init__(
        self,
        name: str | None = None,
        *,
        max_steps: int | None = None,
        max_tool_calls: int | None = None,
        max_tokens: int | None = None,
        max_seconds: float | None = None,
        conversation_id: str | None = None,
    ) -> None:
        self.name = _text("name", name)
        self.conversation_id = _text("conversation_id", conversation_id)
        self.budget: dict[str, Any] = {}
        for key, value in (
            (A.BUDGET_MAX_STEPS, checks.positive_int("max_steps", max_steps, optional=True)),
            (A.BUDGET_MAX_TOOL_CALLS, checks.positive_int("max_tool_calls", max_tool_calls, optional=True)),
            (A.BUDGET_MAX_TOKENS, checks.positive_int("max_tokens", max_tokens, optional=True)),
            (A.BUDGET_MAX_SECONDS, checks.positive_number("max_seconds", max_seconds, optional=True)),
        ):
            if value is not None:
                self.budget[key] = value
        self._stack: list[RunHandle] = []

    def _open(self, tracer: Any, args: Any, kwargs: Any, fn_name: str | None, binder: Binder | None) -> RunHandle:
        name = self.name or fn_name or "agent"
        attrs: dict[str, Any] = {A.OPERATION_NAME: A.OP_INVOKE_AGENT, A.AGENT_NAME: name}
        if self.budget:
            attrs.update(self.budget)
        if self.conversation_id is not None:
            attrs[A.CONVERSATION_ID] = self.conversation_id
        span = tracer.start_span(
            f"{A.OP_INVOKE_AGENT} {name}", kind=_INTERNAL, attributes=attrs, start_time=STATE.clock()
        )
        return RunHandle(span, name, _RUN.get())

    def _noop(self) -> RunHandle:
        return RunHandle(_INVALID, self.name or "agent", None)

    def _current(self) -> RunHandle | None:
        return _RUN.get()


# -- llm ------------------------------------------------------------------------------
class LlmSpec(_Spec[LlmHandle]):
    """A model call: span ``chat {model}`` (CLIENT); see :func:`llm`."""

    __slots__ = ("_stack", "extract", "messages", "model", "provider", "step")

    def __init__(
        self,
        model: str | None = None,
        *,
        provider: str | None = None,
        extract: Callable[[Any], Any] | None = None,
        step: int | None = None,
        messages: Any = None,
    ) -> None:
        self.model = _text("model", model)
        self.provider = _text("provider", provider)
        self.extract = checks.function("extract", extract, optional=True)
        self.step = checks.non_negative_int("step", step, optional=True)
        self.messages = messages
        self._stack: list[LlmHandle] = []

    def _open(self, tracer: Any, args: Any, kwargs: Any, fn_name: str | None, binder: Binder | None) -> LlmHandle:
        model = self.model
        attrs: dict[str, Any] = {A.OPERATION_NAME: A.OP_CHAT}
        if model:
            attrs[A.REQUEST_MODEL] = model
        if self.provider:
            attrs[A.PROVIDER_NAME] = self.provider
        run = _RUN.get()
        step = self.step
        enclosing = _CALL.get()
        if step is None and isinstance(enclosing, (LlmHandle, ToolHandle)) and enclosing.run is run:
            # inside a model call or a tool of the same run: part of that step, not a new one
            step = enclosing.step
        elif run is not None:
            step = run._take_step(step)
        if step is not None:
            attrs[A.STEP] = step
        if CONTENT.enabled and self.messages is not None:
            attrs[A.INPUT_MESSAGES] = render(self.messages)
        elif CONTENT.enabled and binder is not None:
            bound = binder(args or (), kwargs or {})
            attrs[A.INPUT_MESSAGES] = render(bound.get("messages", bound))
        span = tracer.start_span(
            f"{A.OP_CHAT} {model}" if model else A.OP_CHAT, kind=_CLIENT, attributes=attrs, start_time=STATE.clock()
        )
        return LlmHandle(span, model, step, self.extract, run)

    def _noop(self) -> LlmHandle:
        return LlmHandle(_INVALID, self.model, self.step, self.extract)


# -- tool -----------------------------------------------------------------------------
class ToolSpec(_Spec[ToolHandle]):
    """A tool call: span ``execute_tool {name}``; see :func:`tool`."""

    __slots__ = ("_stack", "args", "attempts", "call_id", "check", "idempotent", "name", "step")

    def __init__(
        self,
        name: str | None = None,
        *,
        args: Any = None,
        idempotent: bool | None = None,
        step: int | None = None,
        attempts: int | None = None,
        call_id: str | None = None,
        check: Callable[[Any], str | None] | None = None,
    ) -> None:
        self.name = _text("name", name)
        self.args = args
        self.idempotent = checks.flag("idempotent", idempotent, optional=True)
        self.step = checks.non_negative_int("step", step, optional=True)
        self.attempts = checks.positive_int("attempts", attempts, optional=True)
        self.call_id = _text("call_id", call_id)
        self.check = checks.function("check", check, optional=True)
        self._stack: list[ToolHandle] = []

    def _open(self, tracer: Any, args: Any, kwargs: Any, fn_name: str | None, binder: Binder | None) -> ToolHandle:
        name = self.name or fn_name or "tool"
        if binder is not None:
            args = binder(args, kwargs)
        else:
            args = self.args if self.args is not None else {}
        step = self.step
        run = _RUN.get()
        if step is None and run is not None:
            step = run.step
        attempts = self.attempts or 1
        attrs: dict[str, Any] = {
            A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.TOOL_NAME: name,
            A.TOOL_ARGS_HASH: args_hash(args),
            A.TOOL_ATTEMPTS: attempts,
        }
        if step is not None:
            attrs[A.STEP] = step
        if self.idempotent is not None:
            attrs[A.TOOL_IDEMPOTENT] = bool(self.idempotent)
        if self.call_id is not None:
            attrs[A.TOOL_CALL_ID] = self.call_id
        if CONTENT.enabled:
            attrs[A.TOOL_CALL_ARGUMENTS] = render(args)
        span = tracer.start_span(
            f"{A.OP_EXECUTE_TOOL} {name}", kind=_INTERNAL, attributes=attrs, start_time=STATE.clock()
        )
        return ToolHandle(span, name, step, attempts, self.check, run)

    def _noop(self) -> ToolHandle:
        return ToolHandle(_INVALID, self.name or "tool", self.step, self.attempts or 1, self.check)


# -- public factories with typed overloads ----------------------------------------------
@overload
def agent(name: F, /) -> F: ...
@overload
def agent(
    name: str | None = None,
    *,
    max_steps: int | None = None,
    max_tool_calls: int | None = None,
    max_tokens: int | None = None,
    max_seconds: float | None = None,
    conversation_id: str | None = None,
) -> AgentSpec: ...
def agent(
    name: Any = None,
    *,
    max_steps: int | None = None,
    max_tool_calls: int | None = None,
    max_tokens: int | None = None,
    max_seconds: float | None = None,
    conversation_id: str | None = None,
) -> Any:
    """Trace an agent run as an ``invoke_agent {name}`` span (the run).

    Bare or parameterised decorator on sync/async/generator functions, or a context
    manager yielding a :class:`RunHandle`. ``name`` defaults to the function's name.
    Budgets go on the span as ``loopsight.budget.*``. The span always ends with
    ``loopsight.termination.reason``: what ``terminate()`` set, else ``completed``,
    ``error`` (an exception escaped) or ``cancelled``. A run that ends for any other reason than
    ``completed`` has status ERROR and an ``error.type``: the exception's, else the reason.

    Example:
        >>> import loopsight
        >>> @loopsight.agent(name="order-assistant", max_steps=10)
        ... def answer(question: str) -> str:
        ...     return "42"
        >>> answer("?")
        '42'
        >>> with loopsight.agent("order-assistant") as run:
        ...     run.terminate("max_steps", fallback="partial_result")
    """
    if _decorated(name):
        return AgentSpec()(name)
    return AgentSpec(
        name,
        max_steps=max_steps,
        max_tool_calls=max_tool_calls,
        max_tokens=max_tokens,
        max_seconds=max_seconds,
        conversation_id=conversation_id,
    )


@overload
def llm(model: F, /) -> F: ...
@overload
def llm(
    model: str | None = None,
    *,
    provider: str | None = None,
    extract: Callable[[Any], Any] | None = None,
    step: int | None = None,
    messages: Any = None,
) -> LlmSpec: ...
def llm(
    model: Any = None,
    *,
    provider: str | None = None,
    extract: Callable[[Any], Any] | None = None,
    step: int | None = None,
    messages: Any = None,
) -> Any:
    """Trace a model call as a ``chat {model}`` CLIENT span (``chat`` if the model is unknown).

    Inside a run each call takes the run's next step (0, 1, 2, ...; ``step=`` forces one). A call
    made inside another model call or inside a tool (a tool that summarises with a model) is part
    of that step: it carries the enclosing call's ``loopsight.step`` and starts no step.
    Tokens and finish reasons are read from the return value (OpenAI, Anthropic, LiteLLM,
    ... objects or dicts) or by ``extract(result) -> Usage | dict``; generators, and a stream
    the function returns (``create(..., stream=True)``), are read chunk by chunk and the span
    ends when the stream does. As a context manager it yields an :class:`LlmHandle`; with content
    capture on, ``messages=`` are its input messages (the decorator reads them from the call's
    ``messages`` argument) and :meth:`LlmHandle.record` of the answer its output.

    Example:
        >>> import loopsight
        >>> @loopsight.llm(model="gpt-4o", provider="openai")
        ... def call_model(messages):
        ...     return {"usage": {"prompt_tokens": 12, "completion_tokens": 3},
        ...             "choices": [{"finish_reason": "stop"}]}
        >>> call_model([{"role": "user", "content": "hi"}])["choices"][0]["finish_reason"]
        'stop'
        >>> with loopsight.llm(model="gpt-4o", messages=[{"role": "user", "content": "hi"}]) as call:
        ...     call.set_usage(input_tokens=120, output_tokens=30)
    """
    if _decorated(model):
        return LlmSpec()(model)
    return LlmSpec(model, provider=provider, extract=extract, step=step, messages=messages)


@overload
def tool(name: F, /) -> F: ...
@overload
def tool(
    name: str | None = None,
    *,
    args: Any = None,
    idempotent: bool | None = None,
    step: int | None = None,
    attempts: int | None = None,
    call_id: str | None = None,
    check: Callable[[Any], str | None] | None = None,
) -> ToolSpec: ...
def tool(
    name: Any = None,
    *,
    args: Any = None,
    idempotent: bool | None = None,
    step: int | None = None,
    attempts: int | None = None,
    call_id: str | None = None,
    check: Callable[[Any], str | None] | None = None,
) -> Any:
    """Trace a tool call as an ``execute_tool {name}`` span.

    The arguments' canonical-JSON hash goes to ``loopsight.tool.args_hash`` (decorated
    functions: the bound arguments with defaults, without ``self``; context managers:
    ``args=``). The step is the run's current step. ``check(result)`` may return
    ``"empty_result"`` or ``"garbage"`` to mark a silent failure. As a context manager it
    yields a :class:`ToolHandle` (``retry``, ``fail``, ``mark``, ``loop_detected``, ...).

    Example:
        >>> import loopsight
        >>> @loopsight.tool(idempotent=True)
        ... def query_order(order_id: str) -> dict:
        ...     return {"id": order_id, "status": "shipped"}
        >>> query_order("A1")["status"]
        'shipped'
        >>> with loopsight.tool("search", args={"q": "x"}) as t:
        ...     t.mark("empty_result")
    """
    if _decorated(name):
        return ToolSpec()(name)
    return ToolSpec(name, args=args, idempotent=idempotent, step=step, attempts=attempts, call_id=call_id, check=check)
