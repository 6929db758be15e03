"""Spans from every calling style, with the attribute set of each span kind."""

from __future__ import annotations

import asyncio
import functools
import inspect

import pytest
from opentelemetry.trace import SpanKind, StatusCode

import loopsight
from loopsight import attributes as A


def attrs(span):
    return dict(span.attributes)


def test_bare_and_parameterised_sync(loopsight_spans):
    @loopsight.tool
    def query_order(order_id: str) -> dict:
        """Look up an order."""
        return {"id": order_id}

    @loopsight.tool(name="search", idempotent=True)
    def search_impl(q: str, limit: int = 3) -> list[str]:
        return [q] * limit

    assert query_order("A1") == {"id": "A1"}
    assert search_impl("x") == ["x", "x", "x"]
    assert query_order.__name__ == "query_order"
    assert query_order.__doc__ == "Look up an order."
    assert list(inspect.signature(search_impl).parameters) == ["q", "limit"]
    first, second = loopsight_spans.spans
    assert first.name == "execute_tool query_order"
    assert first.kind is SpanKind.INTERNAL
    assert attrs(first) == {
        A.OPERATION_NAME: "execute_tool",
        A.TOOL_NAME: "query_order",
        A.TOOL_ARGS_HASH: loopsight.args_hash({"order_id": "A1"}),
        A.TOOL_ATTEMPTS: 1,
    }
    assert second.name == "execute_tool search"
    assert second.attributes[A.TOOL_IDEMPOTENT] is True
    # defaults are part of the hashed arguments
    assert second.attributes[A.TOOL_ARGS_HASH] == loopsight.args_hash({"q": "x", "limit": 3})


def test_run_chat_tool_attributes_and_steps(loopsight_spans):
    @loopsight.llm(model="gpt-4o", provider="openai")
    def call_model(messages):
        return {
            "model": "gpt-4o-2024-08-06",
            "usage": {"prompt_tokens": 100 * len(messages), "completion_tokens": 7},
            "choices": [{"finish_reason": "tool_calls"}],
        }

    @loopsight.tool
    def lookup(key):
        return key.upper()

    @loopsight.agent(name="order-assistant", max_steps=10, max_tool_calls=20, max_tokens=50_000, max_seconds=60.0)
    def run(question):
        assert loopsight.current_step() == 0
        lookup("before-any-llm")
        messages = [question]
        for _ in range(3):
            call_model(messages)
            assert loopsight.current_step() == loopsight.current_run().step
            lookup("a")
            lookup("b")
            messages.append("obs")
        return "done"

    assert run("where is my order?") == "done"
    assert loopsight.current_step() is None
    spans = loopsight_spans.spans
    (agent_span,) = loopsight_spans.by_name("invoke_agent")
    assert agent_span.name == "invoke_agent order-assistant"
    assert agent_span.kind is SpanKind.INTERNAL
    assert attrs(agent_span) == {
        A.OPERATION_NAME: "invoke_agent",
        A.AGENT_NAME: "order-assistant",
        A.BUDGET_MAX_STEPS: 10,
        A.BUDGET_MAX_TOOL_CALLS: 20,
        A.BUDGET_MAX_TOKENS: 50_000,
        A.BUDGET_MAX_SECONDS: 60.0,
        A.TERMINATION_REASON: "completed",
    }
    chats = loopsight_spans.by_name("chat")
    assert [c.attributes[A.STEP] for c in chats] == [0, 1, 2]
    assert chats[1].kind is SpanKind.CLIENT
    assert attrs(chats[1]) == {
        A.OPERATION_NAME: "chat",
        A.REQUEST_MODEL: "gpt-4o",
        A.PROVIDER_NAME: "openai",
        A.STEP: 1,
        A.USAGE_INPUT_TOKENS: 200,
        A.USAGE_OUTPUT_TOKENS: 7,
        A.RESPONSE_FINISH_REASONS: ("tool_calls",),
        A.RESPONSE_MODEL: "gpt-4o-2024-08-06",
    }
    tools = loopsight_spans.by_name("execute_tool")
    assert [t.attributes[A.STEP] for t in tools] == [0, 0, 0, 1, 1, 2, 2]
    for span in spans:
        if span is not agent_span:
            assert span.parent.span_id == agent_span.context.span_id
            assert span.context.trace_id == agent_span.context.trace_id


def test_context_manager_forms(loopsight_spans):
    with loopsight.agent("order-assistant", max_steps=2) as run:
        assert loopsight.current_run() is run
        with loopsight.llm(model="gpt-4o") as call:
            call.set_usage(input_tokens=120, output_tokens=30)
            call.set_attribute(A.CONTEXT_MODE, "compact")
        with loopsight.tool("search", args={"q": "x"}, idempotent=True) as t:
            t.retry(TimeoutError("slow"), backoff_ms=200)
            t.retry("429", backoff_ms=400)
            t.loop_detected("exact")
        with loopsight.tool("search", args={"q": "x"}) as t2:
            t2.fail(PermissionError("no"))
        with loopsight.tool("fetch", args={"url": "u"}, step=5, attempts=3) as t3:
            t3.mark("empty_result")
        run.terminate("max_steps", fallback="partial_result")
    assert loopsight.current_run() is None
    chat, search, search2, fetch, agent_span = loopsight_spans.spans
    assert chat.attributes[A.USAGE_INPUT_TOKENS] == 120
    assert chat.attributes[A.CONTEXT_MODE] == "compact"
    assert chat.name == "chat gpt-4o"
    assert search.attributes[A.TOOL_ARGS_HASH] == loopsight.args_hash({"q": "x"})
    assert search.attributes[A.TOOL_ATTEMPTS] == 3
    assert search.attributes[A.STEP] == 0
    assert search.attributes[A.LOOP_KIND] == "exact"
    assert [e.name for e in search.events] == ["retry", "retry", "loop_detected"]
    assert dict(search.events[0].attributes) == {
        A.ERROR_TYPE: "TimeoutError",
        A.ERROR_CLASS: "transient",
        A.BACKOFF_MS: 200.0,
    }
    assert dict(search.events[1].attributes) == {A.ERROR_TYPE: "429", A.ERROR_CLASS: "transient", A.BACKOFF_MS: 400.0}
    assert search.status.status_code is StatusCode.UNSET
    assert search2.status.status_code is StatusCode.ERROR
    assert search2.attributes[A.ERROR_TYPE] == "PermissionError"
    assert search2.attributes[A.ERROR_CLASS] == "fatal"
    assert fetch.attributes[A.STEP] == 5
    assert fetch.attributes[A.TOOL_ATTEMPTS] == 3
    assert fetch.status.status_code is StatusCode.ERROR
    assert fetch.attributes[A.ERROR_CLASS] == "empty_result"
    assert agent_span.attributes[A.TERMINATION_REASON] == "max_steps"
    assert agent_span.attributes[A.FALLBACK] == "partial_result"
    # a run that ends for any reason but completed failed, raised or not (docs/api.md)
    assert (agent_span.status.status_code, agent_span.status.description) == (StatusCode.ERROR, "max_steps")


def test_unknown_model_span_named_chat_then_response_model(loopsight_spans):
    @loopsight.llm
    def call_model():
        return {"usage": {"input_tokens": 3, "output_tokens": 1}}

    with loopsight.llm():
        pass
    call_model()
    plain, named = loopsight_spans.spans
    assert plain.name == "chat"
    assert A.REQUEST_MODEL not in plain.attributes
    assert named.name == "chat"
    assert named.attributes[A.USAGE_INPUT_TOKENS] == 3


def test_explicit_llm_step_moves_run_counter(loopsight_spans):
    with loopsight.agent("a"):
        with loopsight.llm(model="m", step=4):
            pass
        with loopsight.tool("t"):
            pass
        with loopsight.llm(model="m"):
            pass
    chats = loopsight_spans.by_name("chat")
    assert [c.attributes[A.STEP] for c in chats] == [4, 5]
    assert loopsight_spans.by_name("execute_tool")[0].attributes[A.STEP] == 4


def test_model_calls_inside_a_model_call_or_a_tool_start_no_step(loopsight_spans):
    """A nested model call carries the enclosing step: the run's steps and later steps stay right."""

    @loopsight.llm(model="inner")
    def inner():
        return {}

    @loopsight.llm(model="outer")
    def outer():
        inner()
        return {}

    @loopsight.tool
    def summarise(text):
        inner()
        return "short"

    @loopsight.tool
    def lookup():
        return 1

    with loopsight.agent("a") as run:
        outer()
        summarise("long text")
        lookup()
        outer()
        assert run.steps == 2 and run.step == 1
    steps = {}
    for span in loopsight_spans.spans:
        steps.setdefault(span.name, []).append(span.attributes.get(A.STEP))
    assert steps["chat outer"] == [0, 1]
    assert steps["chat inner"] == [0, 0, 1]
    assert steps["execute_tool summarise"] == [0] and steps["execute_tool lookup"] == [0]


def test_a_sub_agent_inside_a_tool_still_numbers_its_model_calls(loopsight_spans):
    @loopsight.llm(model="m")
    def model():
        return {}

    @loopsight.agent(name="sub")
    def sub():
        model()

    @loopsight.tool
    def delegate():
        sub()

    with loopsight.agent("main") as run:
        model()
        delegate()
        model()
    assert [c.attributes[A.STEP] for c in loopsight_spans.by_name("chat")] == [0, 1, 2]
    assert loopsight_spans.by_name("execute_tool delegate")[0].attributes[A.STEP] == 0
    assert run.steps == 3


def test_exception_sets_error_and_propagates_unchanged(loopsight_spans):
    class Boom(Exception):
        pass

    err = Boom("kaput")

    @loopsight.tool
    def explode():
        raise err

    @loopsight.agent
    def runner():
        explode()

    with pytest.raises(Boom) as info:
        runner()
    assert info.value is err
    tool_span, agent_span = loopsight_spans.spans
    assert tool_span.status.status_code is StatusCode.ERROR
    assert tool_span.attributes[A.ERROR_TYPE] == "Boom"
    assert tool_span.attributes[A.ERROR_CLASS] == "permanent"
    assert tool_span.events[0].name == "exception"
    assert agent_span.name == "invoke_agent runner"
    assert agent_span.status.status_code is StatusCode.ERROR
    assert agent_span.attributes[A.TERMINATION_REASON] == "error"


def test_exception_keeps_terminate_reason(loopsight_spans):
    with pytest.raises(loopsight.FatalToolError), loopsight.agent("a") as run:
        run.terminate("fatal_error", fallback="permission")
        raise loopsight.FatalToolError("forbidden", error_type="403")
    (span,) = loopsight_spans.spans
    assert span.attributes[A.TERMINATION_REASON] == "fatal_error"
    assert span.attributes[A.ERROR_TYPE] == "403"
    assert span.attributes[A.ERROR_CLASS] == "fatal"


@pytest.mark.parametrize("reason", sorted(set(A.TERMINATION_REASONS) - {"completed"}))
def test_a_run_ended_without_completing_has_error_type(loopsight_spans, reason):
    """Status ERROR comes with ``error.type`` (OTel semantic conventions): the termination reason."""
    with loopsight.agent("a") as run:
        run.terminate(reason)
    (span,) = loopsight_spans.spans
    assert (span.status.status_code, span.status.description) == (StatusCode.ERROR, reason)
    assert span.attributes[A.ERROR_TYPE] == reason and span.attributes[A.TERMINATION_REASON] == reason
    assert A.ERROR_CLASS not in span.attributes


def test_a_completed_run_has_no_error_type(loopsight_spans):
    with loopsight.agent("a") as run:
        run.terminate("completed")
    (span,) = loopsight_spans.spans
    assert span.status.status_code is StatusCode.UNSET and A.ERROR_TYPE not in span.attributes


def test_keyboard_interrupt_is_cancelled(loopsight_spans):
    @loopsight.agent
    def run():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run()
    (span,) = loopsight_spans.spans
    assert span.attributes[A.TERMINATION_REASON] == "cancelled"


def test_async_functions_and_gather_siblings(loopsight_spans):
    @loopsight.tool
    async def fetch(url: str) -> str:
        await asyncio.sleep(0)
        return url

    @loopsight.llm(model="m")
    async def think():
        return {"usage": {"prompt_tokens": 1, "completion_tokens": 1}}

    @loopsight.agent(name="par")
    async def run():
        await think()
        await think()
        return await asyncio.gather(fetch("a"), fetch("b"), fetch("c"))

    assert asyncio.run(run()) == ["a", "b", "c"]
    (agent_span,) = loopsight_spans.by_name("invoke_agent")
    tools = loopsight_spans.by_name("execute_tool")
    assert len(tools) == 3
    assert {t.parent.span_id for t in tools} == {agent_span.context.span_id}
    assert {t.attributes[A.STEP] for t in tools} == {1}
    assert agent_span.attributes[A.TERMINATION_REASON] == "completed"


def test_async_cancelled_run(loopsight_spans):
    @loopsight.agent
    async def slow():
        await asyncio.sleep(10)

    async def main():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(slow(), 0.01)

    asyncio.run(main())
    (span,) = loopsight_spans.spans
    assert span.attributes[A.TERMINATION_REASON] == "cancelled"


def test_async_with_forms(loopsight_spans):
    async def main():
        async with loopsight.agent("a") as run:
            async with loopsight.llm(model="m") as call:
                call.record({"usage": {"input_tokens": 2, "output_tokens": 1}, "stop_reason": "tool_use"})
            async with loopsight.tool("t", args=[1, 2]) as t:
                assert loopsight.current_tool() is t
            run.terminate("completed")

    asyncio.run(main())
    chat, tool_span, agent_span = loopsight_spans.spans
    assert chat.attributes[A.RESPONSE_FINISH_REASONS] == ("tool_use",)
    assert tool_span.parent.span_id == agent_span.context.span_id


def test_generator_span_open_until_exhausted(loopsight_spans):
    @loopsight.tool
    def pages(n):
        yield from range(n)
        return "end"

    gen = pages(3)
    assert loopsight_spans.spans == []
    assert next(gen) == 0
    assert loopsight.current_tool() is None  # the consumer's context is untouched
    assert list(gen) == [1, 2]
    (span,) = loopsight_spans.spans
    assert span.name == "execute_tool pages"
    assert span.attributes[A.TOOL_ARGS_HASH] == loopsight.args_hash({"n": 3})


def test_generator_closed_early_and_send_throw(loopsight_spans):
    @loopsight.agent
    def chatty():
        got = yield 1
        try:
            yield got
        except ValueError:
            yield "caught"
        yield 99

    gen = chatty()
    assert next(gen) == 1
    assert gen.send("hello") == "hello"
    assert gen.throw(ValueError("x")) == "caught"
    gen.close()
    (span,) = loopsight_spans.spans
    assert span.status.status_code is StatusCode.UNSET
    assert span.attributes[A.TERMINATION_REASON] == "completed"


def test_generator_error(loopsight_spans):
    @loopsight.tool
    def bad():
        yield 1
        raise TimeoutError("late")

    with pytest.raises(TimeoutError):
        list(bad())
    (span,) = loopsight_spans.spans
    assert span.attributes[A.ERROR_CLASS] == "transient"


def test_streaming_llm_generator_reads_chunks(loopsight_spans):
    chunks = [
        {"choices": [{"finish_reason": None}], "usage": None},
        {"choices": [{"finish_reason": "stop"}], "usage": None},
        {"choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 9}},
    ]

    @loopsight.llm(model="gpt-4o")
    def stream():
        yield from chunks

    assert list(stream()) == chunks
    (span,) = loopsight_spans.spans
    assert span.attributes[A.USAGE_INPUT_TOKENS] == 40
    assert span.attributes[A.USAGE_OUTPUT_TOKENS] == 9
    assert span.attributes[A.RESPONSE_FINISH_REASONS] == ("stop",)


def test_async_generator(loopsight_spans):
    @loopsight.tool
    async def ticks(n):
        for i in range(n):
            await asyncio.sleep(0)
            yield i

    @loopsight.agent
    async def run():
        out = [i async for i in ticks(3)]
        agen = ticks(5)
        out.append(await agen.__anext__())
        await agen.aclose()
        return out

    assert asyncio.run(run()) == [0, 1, 2, 0]
    t1, t2, agent_span = loopsight_spans.spans
    assert t1.parent.span_id == agent_span.context.span_id
    assert t2.name == "execute_tool ticks"
    assert t2.status.status_code is StatusCode.UNSET


def test_methods_static_class_and_partial(loopsight_spans):
    class Shop:
        def __init__(self):
            self.stock = {"apple": 3}

        @loopsight.tool
        def count(self, item):
            return self.stock[item]

        @loopsight.tool
        @staticmethod
        def ping(x):
            return x

        @loopsight.tool(name="kind")
        @classmethod
        def kind(cls, x):
            return cls.__name__ + x

    shop = Shop()
    assert shop.count("apple") == 3
    assert Shop.ping(1) == 1 and shop.ping(2) == 2
    assert shop.kind("!") == "Shop!"

    def add(a, b, c=0):
        return a + b + c

    part = loopsight.tool(functools.partial(add, 1))
    assert part(2) == 3
    spans = loopsight_spans.spans
    assert [s.name for s in spans] == [
        "execute_tool count",
        "execute_tool ping",
        "execute_tool ping",
        "execute_tool kind",
        "execute_tool add",
    ]
    assert spans[0].attributes[A.TOOL_ARGS_HASH] == loopsight.args_hash({"item": "apple"})
    assert spans[3].attributes[A.TOOL_ARGS_HASH] == loopsight.args_hash({"x": "!"})
    assert spans[4].attributes[A.TOOL_ARGS_HASH] == loopsight.args_hash({"b": 2, "c": 0})


def test_bare_decorators_over_class_methods(loopsight_spans):
    """A bare ``@loopsight.tool`` over ``@classmethod`` took the classmethod for the span's name
    and calling the method raised TypeError."""

    class Orders:
        @loopsight.agent
        @classmethod
        def run(cls, q):
            return cls.lookup(q)

        @loopsight.tool
        @classmethod
        def lookup(cls, order_id):
            return cls.__name__ + order_id

        @loopsight.llm
        @staticmethod
        def think(prompt):
            return prompt

    assert Orders.run("42") == "Orders42" and Orders().think("hi") == "hi"
    assert [s.name for s in loopsight_spans.spans] == ["execute_tool lookup", "invoke_agent run", "chat"]


def test_var_args_and_kwargs_are_hashed(loopsight_spans):
    @loopsight.tool
    def f(a, *rest, **extra):
        return a

    f(1, 2, 3, k="v")
    (span,) = loopsight_spans.spans
    assert span.attributes[A.TOOL_ARGS_HASH] == loopsight.args_hash({"a": 1, "rest": [2, 3], "k": "v"})


def test_nested_agent_shares_run_steps(loopsight_spans):
    @loopsight.llm(model="m")
    def model():
        return None

    @loopsight.agent(name="sub")
    def sub():
        model()
        loopsight.current_run().terminate("max_steps")

    with loopsight.agent("main") as run:
        model()
        sub()
        model()
        assert loopsight.current_run() is run
    chats = loopsight_spans.by_name("chat")
    assert [c.attributes[A.STEP] for c in chats] == [0, 1, 2]
    sub_span = loopsight_spans.by_name("invoke_agent sub")[0]
    assert sub_span.attributes[A.TERMINATION_REASON] == "max_steps"
    main_span = loopsight_spans.by_name("invoke_agent main")[0]
    assert main_span.attributes[A.TERMINATION_REASON] == "completed"
    assert sub_span.parent.span_id == main_span.context.span_id


def test_check_marks_silent_failures(loopsight_spans):
    @loopsight.tool(check=lambda r: "empty_result" if not r else None)
    def search(q):
        return []

    @loopsight.tool
    def scrape(url):
        loopsight.current_tool().mark("garbage")
        return "<html>login</html>"

    assert search("x") == []
    scrape("u")
    s1, s2 = loopsight_spans.spans
    assert (s1.attributes[A.ERROR_TYPE], s1.attributes[A.ERROR_CLASS]) == ("empty_result", "empty_result")
    assert s2.attributes[A.ERROR_CLASS] == "garbage"
    assert s2.status.status_code is StatusCode.ERROR


def test_deterministic_ids_and_times(loopsight_spans):
    with loopsight.agent("a"):
        loopsight_spans.advance(2.0)
        with loopsight.tool("t"):
            pass
    tool_span, agent_span = loopsight_spans.spans
    assert agent_span.context.span_id == 1 and tool_span.context.span_id == 2
    assert agent_span.context.trace_id == 1
    assert agent_span.start_time == 1_700_000_000 * 10**9
    assert tool_span.start_time - agent_span.start_time == 2_001_000_000
    assert tool_span.end_time - tool_span.start_time == 1_000_000
    loopsight_spans.clear()
    assert loopsight_spans.spans == []


def test_no_provider_means_plain_calls():
    # no fixture: no loopsight provider and no global provider in this process
    from opentelemetry import trace

    if getattr(trace, "_TRACER_PROVIDER", None) is not None:
        pytest.skip("a global TracerProvider was set by another test")

    @loopsight.tool
    def f(x):
        return x * 2

    assert f(2) == 4
    with loopsight.agent("a") as run:
        run.terminate("max_steps")
        with loopsight.tool("t") as t:
            t.retry("x")
    assert loopsight.current_run() is not None  # inert handle while tracing is off
    assert not loopsight.current_run().recording


def test_shared_spec_object_across_concurrent_tasks(loopsight_spans):
    shared_tool = loopsight.tool("search", args={"q": "same"})
    shared_agent = loopsight.agent("worker")

    async def work(delay):
        async with shared_agent:
            async with shared_tool as t:
                await asyncio.sleep(delay)
                assert t.recording
            assert not t.recording  # this task's exit ended this task's span
            return t

    async def main():
        return await asyncio.gather(work(0.02), work(0.0), work(0.01))

    handles = asyncio.run(main())
    tools = loopsight_spans.by_name("execute_tool")
    runs = loopsight_spans.by_name("invoke_agent")
    assert len(tools) == 3 and len(runs) == 3
    # each tool span ended inside its own run, and each handle ended its own span
    for handle in handles:
        span_id = handle.span.get_span_context().span_id
        (tool_span,) = [s for s in tools if s.context.span_id == span_id]
        (run_span,) = [s for s in runs if s.context.span_id == tool_span.parent.span_id]
        assert tool_span.end_time <= run_span.end_time
