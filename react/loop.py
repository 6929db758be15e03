"""The ReAct loop: model turns and tool calls, with every failure class handled.

Example:
    >>> from loopsight import react
    >>> from loopsight.react.llm import ScriptedLLM, call, turn
    >>> @react.tool_def(parameters={"type": "object", "required": ["order_id"],
    ...                 "properties": {"order_id": {"type": "string"}}})
    ... def query_order(order_id: str) -> dict:
    ...     return {"order_id": order_id, "status": "shipped"}
    >>> llm = ScriptedLLM([turn(call("query_order", order_id="100234")), "Order 100234 has shipped."])
    >>> result = react.ReactAgent(llm, [query_order]).run("Where is order 100234?")
    >>> result.termination_reason, result.answer, result.summary.tool_calls
    ('completed', 'Order 100234 has shipped.', 1)
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from opentelemetry import trace

import loopsight
from loopsight import attributes as A
from loopsight import checks
from loopsight.react import fallback
from loopsight.react.config import ReactConfig
from loopsight.react.context import dumps, estimate_tokens, truncate
from loopsight.react.guard import LoopGuard
from loopsight.react.idempotency import IdempotencyLedger
from loopsight.react.llm.base import LLMResponse, ToolCall
from loopsight.react.result import RunResult, RunSummary
from loopsight.react.schema import missing_required, validate
from loopsight.react.silent import detect
from loopsight.react.tools import IDEMPOTENCY_KEY_PARAM, Tool

log = logging.getLogger("loopsight.react")

T = TypeVar("T")
UNREADABLE_RESULT = "unreadable_result"
"""``error.type`` of a call whose result cannot be rendered as text (its ``__str__`` raised)."""
NOT_AN_ERROR = "This describes the failed call, not the world: do not reinterpret it as a fact."


@dataclass
class _Run:
    """Mutable state of one run."""

    task: str
    config: ReactConfig
    started: float
    rng: random.Random
    guard: LoopGuard
    ledger: IdempotencyLedger
    messages: list[dict[str, Any]]
    summary: RunSummary = field(default_factory=RunSummary)
    summarized: list[dict[str, Any]] = field(default_factory=list)
    confirmed: list[dict[str, Any]] = field(default_factory=list)
    corrections: dict[str, int] = field(default_factory=dict)
    missing: dict[str, list[str]] = field(default_factory=dict)
    facts: fallback.Facts = field(default_factory=lambda: fallback.Facts(reason="completed"))
    stop: str | None = None
    answer: str | None = None
    error: str | None = None
    same_calls: dict[tuple[str, str], asyncio.Lock] = field(default_factory=dict)

    def one_at_a_time(self, tool: str, digest: str) -> asyncio.Lock:
        """The lock of one (tool, arguments): identical calls of a turn run one after the other, so
        each sees what the last left (the idempotency ledger's first result, the loop guard's count)."""
        return self.same_calls.setdefault((tool, digest), asyncio.Lock())

    def remaining(self) -> float:
        return self.config.max_seconds - (time.monotonic() - self.started)

    def end(self, reason: str) -> None:
        if self.stop is None:
            self.stop = reason


class ReactAgent:
    """A tool-calling agent: ``run(task)`` / ``await arun(task)`` return a :class:`RunResult`.

    Each run is one ``invoke_agent {name}`` span with a ``chat`` span per model call and
    an ``execute_tool`` span per tool call. Tool and model failures never raise: they
    are classified (:func:`loopsight.classify`) and handled (retried, fed back, or end
    the run with a termination reason and a graded fallback).
    """

    def __init__(
        self, llm: Any, tools: Sequence[Tool], config: ReactConfig | None = None, *, name: str = "react-agent"
    ) -> None:
        if not callable(getattr(llm, "complete", None)) and not callable(getattr(llm, "acomplete", None)):
            raise TypeError("llm needs a complete(messages, tools) or acomplete(messages, tools) method")
        self.llm = llm
        if isinstance(tools, Tool):
            raise TypeError(f"tools must be a list of Tool, got the single tool {tools.name!r}: pass [{tools.name}]")
        self.tools: dict[str, Tool] = {}
        for t in checks.each("tools", tools, _tool):
            if t.name in self.tools:
                raise ValueError(f"two tools are named {t.name!r}")
            self.tools[t.name] = t
        self.config = (
            ReactConfig()
            if config is None
            else checks.instance("config", config, ReactConfig, hint=" (react.ReactConfig(max_steps=...))")
        )
        self.name = checks.text("name", name, empty=False)
        self._specs = [t.openai_spec() for t in self.tools.values()]
        self._spec_tokens = estimate_tokens(json.dumps(self._specs)) if self._specs else 0

    # -- entry points -------------------------------------------------------------------
    def run(self, task: str, *, conversation_id: str | None = None) -> RunResult:
        """Run the loop to completion (blocking). Safe to call from inside an event loop.

        ``conversation_id``: the conversation this run answers in (``gen_ai.conversation.id`` on
        its span): the runs of one conversation are a session, whose loops across runs loopsight finds.
        ``task`` must be a non-empty str.
        """
        _check_run(task, conversation_id)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(task, conversation_id=conversation_id))
        ctx = contextvars.copy_context()
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(ctx.run, asyncio.run, self.arun(task, conversation_id=conversation_id)).result()

    async def arun(self, task: str, *, conversation_id: str | None = None) -> RunResult:
        """Run the loop in the current event loop (``task`` and ``conversation_id`` as :meth:`run`)."""
        _check_run(task, conversation_id)
        cfg = self.config
        st = _Run(
            task=task,
            config=cfg,
            started=time.monotonic(),
            rng=random.Random(cfg.seed),
            guard=LoopGuard(cfg.guard),
            ledger=IdempotencyLedger(),
            messages=[{"role": "system", "content": cfg.system_prompt}, {"role": "user", "content": task}],
        )
        with loopsight.agent(
            self.name,
            max_steps=cfg.max_steps,
            max_tool_calls=cfg.max_tool_calls,
            max_tokens=cfg.max_tokens,
            max_seconds=cfg.max_seconds,
            conversation_id=conversation_id,
        ) as run:
            try:
                reason = await self._loop(st)
            except Exception as exc:  # a pluggable part (summarizer, check, embedder) failed: end, never raise
                st.error = f"{type(exc).__name__}: {_safe_str(exc)}"
                reason = "error"
                run.set_attribute(A.ERROR_TYPE, type(exc).__name__)
            result = self._finish(st, reason)
            if reason != "completed":
                run.terminate(reason, fallback=result.fallback)
            ctx = trace.get_current_span().get_span_context()
            result.trace_id = f"{ctx.trace_id:032x}" if ctx.is_valid else None
        return result

    # -- the loop -----------------------------------------------------------------------
    async def _loop(self, st: _Run) -> str:
        cfg = self.config
        while True:
            if st.summary.steps >= cfg.max_steps:
                return "max_steps"
            if st.remaining() <= 0:
                return "timeout"
            if st.summary.total_tokens >= cfg.max_tokens:
                return "token_budget"
            mode, ctx_tokens = cfg.context.prepare(st.messages, st.summarized)
            ctx_tokens += self._spec_tokens
            st.summary.context_modes.append(mode)
            st.summary.peak_context_tokens = max(st.summary.peak_context_tokens, ctx_tokens)
            if st.summary.total_tokens + ctx_tokens > cfg.max_tokens:
                return "token_budget"
            response = await self._model_turn(st, mode, ctx_tokens)
            if isinstance(response, str):
                return response
            st.summary.steps += 1
            st.messages.append(response.assistant_message())
            if st.summary.total_tokens > cfg.max_tokens:
                st.answer = None if response.tool_calls else response.content
                return "token_budget"
            if not response.tool_calls:
                st.answer = response.content or ""
                st.summary.effective_steps += 1
                return "completed"
            admitted, refused = self._admit(st, response.tool_calls)
            if len(admitted) == 1:
                outcomes = [await self._tool_call(st, admitted[0], mode)]
            else:
                outcomes = list(await asyncio.gather(*(self._tool_call(st, c, mode) for c in admitted)))
            for c, (observation, _) in zip(admitted, outcomes, strict=False):
                st.messages.append({"role": "tool", "tool_call_id": c.id, "name": c.name, "content": observation})
            for c in refused:
                st.messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": c.id,
                        "name": c.name,
                        "content": dumps({"error_type": "TOOL_BUDGET_EXHAUSTED", "tool": c.name}),
                    }
                )
            if any(useful for _, useful in outcomes):
                st.summary.effective_steps += 1
            if st.stop is not None:
                return st.stop
            if refused:
                return "max_tool_calls"

    def _admit(self, st: _Run, calls: Sequence[ToolCall]) -> tuple[list[ToolCall], list[ToolCall]]:
        """Split a turn's calls into those the budgets allow and those they refuse (before any runs)."""
        admitted: list[ToolCall] = []
        refused: list[ToolCall] = []
        per_tool = st.summary.calls_per_tool
        for c in calls:
            cap = self.config.tool_cap(c.name)
            if st.summary.tool_calls >= self.config.max_tool_calls or (
                cap is not None and per_tool.get(c.name, 0) >= cap
            ):
                refused.append(c)
                continue
            admitted.append(c)
            st.summary.tool_calls += 1
            per_tool[c.name] = per_tool.get(c.name, 0) + 1
        return admitted, refused

    async def _model_turn(self, st: _Run, mode: str, ctx_tokens: int) -> LLMResponse | str:
        """One model turn with transient retries; a str is the termination reason instead."""
        cfg = self.config
        step = st.summary.steps
        provider = getattr(self.llm, "provider", None)
        for attempt in range(cfg.llm_max_retries + 1):
            remaining = st.remaining()
            if remaining <= 0:
                return "timeout"
            try:
                with loopsight.llm(model=self.llm.model, provider=provider, step=step, messages=st.messages) as chat:
                    chat.set_attribute(A.CONTEXT_MODE, mode)
                    chat.set_attribute(A.CONTEXT_TOKENS, ctx_tokens)
                    response = await asyncio.wait_for(self._complete(st.messages), timeout=remaining)
                    _record_usage(chat, response)
                    chat.record(response.assistant_message())  # the output messages, with content capture on
            except Exception as exc:
                if st.remaining() <= 0:
                    return "timeout"
                etype, eclass = loopsight.classify(exc)
                st.summary.count("error_classes", eclass)
                if eclass == "fatal":
                    st.facts.fatal = f"model {self.llm.model}: {etype}"
                    return "fatal_error"
                delay = cfg.retry.delay(attempt, st.rng, getattr(exc, "retry_after", None))
                if eclass == "transient" and attempt < cfg.llm_max_retries and delay < st.remaining():
                    await asyncio.sleep(delay)
                    continue
                if eclass == "transient":
                    st.facts.transient_exhausted.append(f"the model service ({self.llm.model})")
                st.facts.model_failure = fallback.model_failure(self.llm.model, etype, eclass)
                st.error = f"model call failed: {etype} ({eclass}): {_safe_str(exc)}"
                return "error"
            # a count the provider did not send (None) is unknown: only what is known counts
            st.summary.input_tokens += _count(response.input_tokens)
            st.summary.output_tokens += _count(response.output_tokens)
            return response
        return "error"  # pragma: no cover - the loop always returns inside

    async def _complete(self, messages: list[dict[str, Any]]) -> LLMResponse:
        acomplete = getattr(self.llm, "acomplete", None)
        if acomplete is not None:
            return await acomplete(list(messages), self._specs)
        return await _in_thread(lambda: self.llm.complete(list(messages), self._specs))

    # -- one tool call ------------------------------------------------------------------
    async def _tool_call(self, st: _Run, c: ToolCall, mode: str) -> tuple[str, bool]:
        """Validate, guard, execute (with retries) and observe one call: (observation, useful)."""
        tool = self.tools.get(c.name)
        args, parse_error = _parse_arguments(c.arguments)
        span_args = args if parse_error is None else {"_raw_arguments": c.arguments}
        with loopsight.tool(
            c.name, args=span_args, call_id=c.id, idempotent=None if tool is None else tool.idempotent
        ) as t:
            if tool is None:
                st.summary.tool_failures += 1
                return self._invalid(st, t, c.name, "UNKNOWN_TOOL", [f"there is no tool named {c.name!r}"], None), False
            if parse_error is not None:
                st.summary.tool_failures += 1
                return self._invalid(st, t, tool.name, "MALFORMED_ARGUMENTS", [parse_error], tool.parameters), False
            problems = validate(args, tool.parameters)
            if problems:
                st.summary.tool_failures += 1
                st.missing[tool.name] = missing_required(args, tool.parameters)
                return self._invalid(st, t, tool.name, "INVALID_ARGUMENT", problems, tool.parameters), False
            st.missing.pop(tool.name, None)
            digest = loopsight.args_hash(args)
            async with st.one_at_a_time(tool.name, digest):
                return await self._guarded(st, t, tool, args, digest, mode)

    async def _guarded(
        self, st: _Run, t: Any, tool: Tool, args: dict[str, Any], digest: str, mode: str
    ) -> tuple[str, bool]:
        """Guard, replay or execute a valid call: (observation, useful)."""
        hit = st.guard.check(tool.name, args, digest)
        if hit is not None:
            t.loop_detected(hit.kind, similarity=hit.similarity)
            st.summary.count("loop_kinds", hit.kind)
            self._guard_hit(st)
            return dumps(
                {"error_type": "LOOP_DETECTED", "kind": hit.kind, "tool": tool.name, "instruction": hit.hint}
            ), False
        if not tool.idempotent:
            replay = st.ledger.replay(tool.name, digest)
            if replay is not None:
                t.set_attribute("loopsight.tool.replayed", True)
                st.guard.record(tool.name, args, digest, "ok")
                st.guard.record_failure(tool.name, None)
                return replay, False
        observation, outcome, error_type = await self._execute(st, t, tool, args, mode)
        st.guard.record(tool.name, args, digest, outcome)
        repeated = st.guard.record_failure(tool.name, error_type)
        if outcome == "ok":
            if not tool.idempotent:
                st.ledger.remember(tool.name, digest, observation)
            return observation, True
        st.summary.tool_failures += 1
        if repeated:
            t.loop_detected("repeated_error")
            st.summary.count("loop_kinds", "repeated_error")
            st.summary.loop_hits += 1
            st.end("repeated_error")
        return observation, False

    def _guard_hit(self, st: _Run) -> None:
        st.summary.loop_hits += 1
        st.summary.tool_failures += 1
        if st.summary.loop_hits >= self.config.loop_hits_to_stop:
            st.end("loop_detected")

    def _invalid(
        self,
        st: _Run,
        t: Any,
        tool: str,
        error_type: str,
        problems: list[str],
        schema: dict[str, Any] | None,
        span_error_type: str | None = None,
    ) -> str:
        """Feed an invalid call back with the schema; end the run once corrections run out.

        ``error_type`` is the model's code (``INVALID_ARGUMENT``); the span's ``error.type`` is
        ``span_error_type``, else that code in lower case (``invalid_argument``)."""
        used = st.corrections.get(tool, 0) + 1
        st.corrections[tool] = used
        left = self.config.max_corrections - used + 1
        span_type = span_error_type or error_type.lower()
        t.fail(loopsight.InvalidArgumentError("; ".join(problems), error_type=span_type))
        st.summary.count("error_classes", "invalid_argument")
        body: dict[str, Any] = {"error_type": error_type, "tool": tool, "errors": problems}
        if schema is not None:
            body["schema"] = schema
        else:
            body["available_tools"] = sorted(self.tools)
        if left > 0:
            st.summary.corrections += 1
            body["corrections_left"] = left - 1
            body["instruction"] = "Fix the arguments to match the schema and call again."
        else:
            body["instruction"] = "No corrections left for this tool."
            st.facts.corrections_exhausted = tool
            st.end("repeated_error")
        return dumps(body)

    async def _execute(
        self, st: _Run, t: Any, tool: Tool, args: dict[str, Any], mode: str
    ) -> tuple[str, str, str | None]:
        """Run the tool with retries for transient errors: (observation, outcome, the failure's ``error.type``)."""
        cfg = self.config
        key = st.ledger.new_key() if tool.takes_idempotency_key else None
        kwargs = dict(args, **{IDEMPOTENCY_KEY_PARAM: key}) if key is not None else dict(args)
        if key is not None:
            t.set_attribute("loopsight.tool.idempotency_key", key)
        attempt = 0
        while True:
            budget = st.remaining() * cfg.deadline_share
            own = tool.timeout or cfg.default_tool_timeout
            timeout = min(own, budget)
            try:
                if timeout <= 0:
                    raise _LoopCut("the run's time budget is spent", error_type="timeout")
                result = await _invoke(tool, kwargs, timeout)
                break
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                etype, eclass = loopsight.classify(exc)
                if eclass != "invalid_argument":
                    st.summary.count("error_classes", eclass)
                if isinstance(exc, _LoopCut) and timeout < own:
                    # the loop's own timer, set by the run's remaining time (not the tool's own
                    # timeout), cut the call short; a timeout the tool raised itself is retried below
                    t.fail(exc)
                    st.end("timeout")
                    return dumps({"error_type": "RUN_TIME_BUDGET_EXHAUSTED", "tool": tool.name}), "error", etype
                if eclass == "transient":
                    delay = cfg.retry.delay(attempt, st.rng, getattr(exc, "retry_after", None))
                    if tool.retry_safe and attempt < tool.max_retries and delay < st.remaining() * cfg.deadline_share:
                        t.retry(exc, backoff_ms=round(delay * 1000, 1))
                        st.summary.retries += 1
                        attempt += 1
                        await asyncio.sleep(delay)
                        continue
                    t.fail(exc)
                    st.facts.transient_exhausted.append(tool.name)
                    return (
                        dumps(
                            {
                                "error_type": "TOOL_RETRY_EXHAUSTED",
                                "tool": tool.name,
                                "last_error": etype,
                                "instruction": f"{tool.name} is failing right now. Do not call it again with the same "
                                "arguments: change approach or answer with what you have.",
                            }
                        ),
                        "error",
                        etype,
                    )
                if eclass == "invalid_argument":
                    # the span's error.type is the exception's, as @loopsight.tool records it; the model
                    # gets it as an upper-case code, as every tool error
                    problems = [_safe_str(exc) or etype]
                    observation = self._invalid(st, t, tool.name, _upper(etype), problems, tool.parameters, etype)
                    return observation, "error", etype
                t.fail(exc)
                if eclass == "fatal":
                    st.facts.fatal = f"{tool.name}: {etype}"
                    st.end("fatal_error")
                    return (
                        dumps(
                            {
                                "error_type": "PERMISSION_DENIED",
                                "tool": tool.name,
                                "detail": etype,
                                "note": NOT_AN_ERROR,
                            }
                        ),
                        "error",
                        etype,
                    )
                return (
                    dumps(
                        {
                            "error_type": _upper(etype),
                            "tool": tool.name,
                            "arguments": args,
                            "message": truncate(_safe_str(exc), 300),
                            "note": NOT_AN_ERROR,
                        }
                    ),
                    "error",
                    etype,
                )
        silent = detect(tool.name, result, cfg.silent_checks)
        if silent is not None:
            t.fail(silent.code, error_class=silent.kind)
            st.summary.count("error_classes", silent.kind)
            label = "EMPTY_RESULT" if silent.kind == "empty_result" else "GARBAGE_RESULT"
            advice = (
                "Nothing came back: do not conclude that it does not exist; try other terms or another source."
                if silent.kind == "empty_result"
                else "The content is unusable; do not quote it. Try another source."
            )
            return (
                dumps(
                    {
                        "error_type": label,
                        "tool": tool.name,
                        "arguments": args,
                        "reason": silent.reason,
                        "instruction": advice,
                    }
                ),
                silent.kind,
                silent.code,
            )
        try:
            text = result if isinstance(result, str) else dumps(result)
        except Exception as exc:  # the tool answered with something that cannot be rendered (its __str__ raised)
            detail = f"{type(exc).__name__}: {_safe_str(exc)}"
            t.fail(loopsight.PermanentToolError(detail, error_type=UNREADABLE_RESULT))
            st.summary.count("error_classes", "permanent")
            return (
                dumps(
                    {
                        "error_type": _upper(UNREADABLE_RESULT),
                        "tool": tool.name,
                        "arguments": args,
                        "message": truncate(detail, 300),
                        "instruction": f"{tool.name} ran but its result could not be read as text: do not "
                        "assume what it said; try another way or answer with what you have.",
                        "note": NOT_AN_ERROR,
                    }
                ),
                "error",
                UNREADABLE_RESULT,
            )
        t.set_result(result)
        observation = truncate(text, cfg.context.observation_limit(mode))
        st.confirmed.append({"tool": tool.name, "arguments": args, "result": observation})
        return observation, "ok", None

    # -- the end ------------------------------------------------------------------------
    def _finish(self, st: _Run, reason: str) -> RunResult:
        st.summary.duration_s = round(time.monotonic() - st.started, 4)
        facts = st.facts
        facts.reason = reason
        facts.confirmed = st.confirmed
        facts.missing_arguments = sorted({m for ms in st.missing.values() for m in ms})
        grade = fallback.choose(facts)
        if reason == "completed":
            status, text = "ok", st.answer or ""
        else:
            status = "error" if reason == "error" else "fallback"
            text = fallback.message(grade, facts) if grade else ""
        return RunResult(
            status=status,
            answer=st.answer,
            termination_reason=reason,
            fallback=grade,
            message=text,
            partial_results=list(st.confirmed),
            summary=st.summary,
            messages=st.messages,
            error=st.error,
        )


def _tool(name: str, value: Any) -> Tool:
    return checks.instance(name, value, Tool, hint=" (declare it with react.tool_def)")


def _check_run(task: Any, conversation_id: Any) -> None:
    checks.text("task", task, empty=False)
    checks.text("conversation_id", conversation_id, optional=True)


def _parse_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    if raw is None or not str(raw).strip():
        return {}, None
    try:
        value = json.loads(raw)
    except (TypeError, ValueError) as exc:
        return {}, f"arguments are not valid JSON: {exc}"
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def _count(value: object) -> int:
    """A token count the adapter gave, 0 when it is not a count (None: not sent)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _record_usage(chat: Any, response: LLMResponse) -> None:
    """The turn's usage on its model span. A value an adapter got wrong (a float count, no finish
    reason) is logged and left out: telemetry never fails a turn the model answered."""
    try:
        chat.set_usage(
            input_tokens=response.input_tokens,
            output_tokens=response.output_tokens,
            finish_reasons=[response.finish_reason] if response.finish_reason is not None else None,
            cache_read_tokens=response.cache_read_tokens,
            cache_write_tokens=response.cache_write_tokens,
        )
    except (TypeError, ValueError) as exc:
        log.warning("the model's usage is not recorded: %s", exc)


def _safe_str(value: object) -> str:
    """``str(value)``, or a description when its ``__str__`` raises (a tool's object must not end the run)."""
    try:
        return str(value)
    except Exception as exc:
        return f"<unprintable {type(value).__name__}: __str__ raised {type(exc).__name__}>"


def _upper(error_type: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in error_type).upper()


class _LoopCut(loopsight.TransientToolError):
    """The loop's own timer cancelled a tool call: a ``timeout`` told apart from one the tool raised."""


async def _invoke(tool: Tool, kwargs: dict[str, Any], timeout: float) -> Any:
    """Call the tool within ``timeout`` seconds (sync tools run in a daemon thread).

    The loop's own timer firing raises :class:`_LoopCut`; a ``TimeoutError`` the tool raises
    itself (its HTTP client giving up) propagates as the tool's own transient failure.
    """
    cut = asyncio.timeout(timeout)
    try:
        async with cut:
            if tool.is_async:
                return await tool.fn(**kwargs)
            return await _in_thread(lambda: tool.fn(**kwargs))
    except TimeoutError:
        if cut.expired():
            raise _LoopCut(f"{tool.name} timed out after {timeout:.3f}s", error_type="timeout") from None
        raise


async def _in_thread(fn: Callable[[], T]) -> T:
    """Run a blocking call in its own daemon thread; cancelled (a timeout around it), the thread is
    abandoned, not joined."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    ctx = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def target() -> None:
        try:
            value, error = ctx.run(fn), None
        except BaseException as exc:  # delivered to the awaiting coroutine
            value, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop closed after the caller gave up on this call
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=target, name="loopsight-react-tool", daemon=True).start()
    return await future
