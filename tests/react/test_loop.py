"""One test per technique of the ReAct loop: the returned RunResult and the spans it emitted."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest

import loopsight
from loopsight import react
from loopsight.react.guard import GuardConfig
from loopsight.react.llm import LLMResponse, ScriptedLLM, call, turn
from loopsight.react.llm.base import ToolCall
from loopsight.react.retry import RetryPolicy

ORDER_SCHEMA = {
    "type": "object",
    "required": ["order_id"],
    "properties": {"order_id": {"type": "string", "pattern": "^[0-9]{6}$"}},
    "additionalProperties": False,
}
FAST = RetryPolicy(base=0.001, cap=0.005)


def cfg(**kw: Any) -> react.ReactConfig:
    kw.setdefault("retry", FAST)
    kw.setdefault("seed", 1)
    return react.ReactConfig(**kw)


def order_tool(fn=None, **kw: Any) -> react.Tool:
    def query_order(order_id: str) -> dict:
        return {"order_id": order_id, "status": "shipped"}

    return react.Tool("query_order", fn or query_order, "Look an order up.", ORDER_SCHEMA, **kw)


def run_span(spans) -> Any:
    (run,) = spans.by_name("invoke_agent")
    return run


def tool_spans(spans, name: str = "") -> list[Any]:
    return spans.by_name(f"execute_tool {name}".rstrip())


def tool_messages(result: react.RunResult) -> list[dict]:
    return [
        json.loads(m["content"]) if m["content"].startswith("{") else m["content"]
        for m in result.messages
        if m["role"] == "tool"
    ]


def test_completed_run_emits_run_chat_and_tool_spans(loopsight_spans):
    llm = ScriptedLLM([turn(call("query_order", order_id="100234")), "Order 100234 has shipped."])
    result = react.ReactAgent(llm, [order_tool()], cfg(), name="order-assistant").run("Where is 100234?")
    assert (result.status, result.termination_reason, result.fallback) == ("ok", "completed", None)
    assert result.answer == "Order 100234 has shipped." and result.message == result.answer
    assert result.summary.steps == 2 and result.summary.effective_steps == 2 and result.summary.tool_calls == 1
    assert result.partial_results[0]["tool"] == "query_order"
    run = run_span(loopsight_spans)
    assert run.name == "invoke_agent order-assistant"
    assert run.attributes["loopsight.termination.reason"] == "completed"
    assert run.attributes["loopsight.budget.max_steps"] == 12
    chats = loopsight_spans.by_name("chat scripted-model")
    assert [c.attributes["loopsight.step"] for c in chats] == [0, 1]
    assert all(c.attributes["loopsight.context.mode"] == "normal" for c in chats)
    assert chats[1].attributes["gen_ai.usage.input_tokens"] > chats[0].attributes["gen_ai.usage.input_tokens"]
    (tool,) = tool_spans(loopsight_spans, "query_order")
    assert tool.attributes["loopsight.step"] == 0
    assert tool.attributes["loopsight.tool.args_hash"] == loopsight.args_hash({"order_id": "100234"})
    assert tool.parent.span_id == run.context.span_id
    assert result.trace_id == f"{run.context.trace_id:032x}"


def test_transient_errors_are_retried_with_backoff_and_hidden_from_the_model(loopsight_spans):
    attempts = []

    def flaky(order_id: str) -> dict:
        attempts.append(order_id)
        if len(attempts) < 3:
            raise loopsight.TransientToolError("rate limited", error_type="429", retry_after=0.01)
        return {"order_id": order_id, "status": "shipped"}

    llm = ScriptedLLM([turn(call("query_order", order_id="100234")), "shipped"])
    result = react.ReactAgent(llm, [order_tool(flaky, max_retries=3)], cfg()).run("status?")
    assert result.termination_reason == "completed" and len(attempts) == 3
    assert result.summary.retries == 2 and result.summary.tool_failures == 0
    assert tool_messages(result) == [{"order_id": "100234", "status": "shipped"}]  # no trace of the retries
    (span,) = tool_spans(loopsight_spans)
    assert span.attributes["loopsight.tool.attempts"] == 3
    retries = [e for e in span.events if e.name == "retry"]
    assert len(retries) == 2
    assert all(
        e.attributes["error.type"] == "429" and e.attributes["loopsight.error.class"] == "transient" for e in retries
    )
    assert all(e.attributes["loopsight.backoff_ms"] >= 10.0 for e in retries)  # retry_after is a floor
    assert span.status.is_ok


def test_exhausted_retries_give_one_tool_retry_exhausted_observation(loopsight_spans):
    def down(order_id: str) -> dict:
        raise ConnectionError("order service unreachable")

    llm = ScriptedLLM([turn(call("query_order", order_id="100234")), "The order service is down."])
    result = react.ReactAgent(llm, [order_tool(down, max_retries=2)], cfg()).run("status?")
    (obs,) = tool_messages(result)
    assert obs["error_type"] == "TOOL_RETRY_EXHAUSTED" and obs["last_error"] == "ConnectionError"
    assert "change approach" in obs["instruction"]
    (span,) = tool_spans(loopsight_spans)
    assert span.attributes["loopsight.tool.attempts"] == 3
    assert span.attributes["loopsight.error.class"] == "transient"
    assert not span.status.is_ok


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_per_tool_timeout_is_enforced_for_sync_and_async_tools(loopsight_spans, kind):
    if kind == "sync":

        def slow(order_id: str) -> dict:
            time.sleep(0.5)
            return {}
    else:

        async def slow(order_id: str) -> dict:
            await asyncio.sleep(0.5)
            return {}

    llm = ScriptedLLM([turn(call("query_order", order_id="100234")), "timed out"])
    started = time.monotonic()
    result = react.ReactAgent(llm, [order_tool(slow, timeout=0.03, max_retries=1)], cfg()).run("status?")
    assert time.monotonic() - started < 0.4
    assert tool_messages(result)[0]["last_error"] == "timeout"
    (span,) = tool_spans(loopsight_spans)
    assert span.attributes["error.type"] == "timeout" and span.attributes["loopsight.tool.attempts"] == 2


def test_tool_timeout_is_capped_by_the_remaining_run_budget(loopsight_spans):
    def stalls(order_id: str) -> dict:
        time.sleep(2)
        return {}

    llm = ScriptedLLM([turn(call("query_order", order_id="100234")), "never"])
    started = time.monotonic()
    result = react.ReactAgent(llm, [order_tool(stalls, timeout=30)], cfg(max_seconds=0.25)).run("status?")
    assert time.monotonic() - started < 0.6
    assert result.termination_reason == "timeout" and result.fallback == "retry_later"
    assert run_span(loopsight_spans).attributes["loopsight.termination.reason"] == "timeout"
    assert tool_spans(loopsight_spans)[0].attributes["error.type"] == "timeout"


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_timeout_the_tool_raises_itself_is_retried_even_when_the_run_budget_caps_its_timeout(loopsight_spans, kind):
    # max_seconds=20: the default 30 s tool timeout is capped at 90 % of the time left, but the
    # tool's own HTTP client gave up after 0.05 s: a transient failure, not the run's deadline
    attempts: list[float] = []

    def answer(order_id: str) -> dict:
        attempts.append(time.monotonic())
        if len(attempts) == 1:
            raise TimeoutError("read timed out (client timeout 0.05 s)")
        return {"order_id": order_id, "status": "shipped"}

    if kind == "sync":

        def flaky(order_id: str) -> dict:
            time.sleep(0.05)
            return answer(order_id)
    else:

        async def flaky(order_id: str) -> dict:
            await asyncio.sleep(0.05)
            return answer(order_id)

    llm = ScriptedLLM([turn(call("query_order", order_id="100234")), "It has shipped."])
    result = react.ReactAgent(llm, [order_tool(flaky, max_retries=2)], cfg(max_seconds=20)).run("status?")
    assert (result.termination_reason, result.answer) == ("completed", "It has shipped.")
    assert len(attempts) == 2 and result.summary.retries == 1
    assert tool_messages(result) == [{"order_id": "100234", "status": "shipped"}]
    (span,) = tool_spans(loopsight_spans)
    assert span.status.is_ok and span.attributes["loopsight.tool.attempts"] == 2
    (retry,) = [e for e in span.events if e.name == "retry"]
    assert retry.attributes["error.type"] == "TimeoutError"
    assert retry.attributes["loopsight.error.class"] == "transient"


def test_a_tool_that_keeps_raising_its_own_timeouts_is_retried_until_the_runs_deadline(loopsight_spans):
    attempts: list[float] = []

    def flaky(order_id: str) -> dict:
        attempts.append(time.monotonic())
        time.sleep(0.05)
        raise TimeoutError("read timed out")

    llm = ScriptedLLM(lambda m, t: turn(call("query_order", order_id="100234")))
    started = time.monotonic()
    result = react.ReactAgent(
        llm, [order_tool(flaky, max_retries=50)], cfg(max_seconds=0.3, retry=RetryPolicy(base=0.01, cap=0.02))
    ).run("status?")
    assert time.monotonic() - started < 1.0
    assert len(attempts) >= 3  # retried while time was left (it used to end at the first one)
    assert result.termination_reason == "timeout" and result.fallback == "retry_later"
    assert run_span(loopsight_spans).attributes["loopsight.termination.reason"] == "timeout"


def test_invalid_arguments_are_fed_back_with_the_schema_and_corrected(loopsight_spans):
    llm = ScriptedLLM(
        [
            turn(call("query_order", order_id="订单一零零二三四")),
            turn(call("query_order", order_id="100234")),
            "Order 100234 has shipped.",
        ]
    )
    result = react.ReactAgent(llm, [order_tool()], cfg()).run("我的订单一零零二三四在哪?")
    assert result.termination_reason == "completed" and result.summary.corrections == 1
    first = tool_messages(result)[0]
    assert first["error_type"] == "INVALID_ARGUMENT" and first["schema"] == ORDER_SCHEMA
    assert "does not match pattern" in first["errors"][0] and first["corrections_left"] == 1
    bad, good = tool_spans(loopsight_spans)
    assert bad.attributes["loopsight.error.class"] == "invalid_argument"
    assert bad.attributes["error.type"] == "invalid_argument"
    assert good.status.is_ok


def test_corrections_are_capped_then_the_run_falls_back_to_clarify(loopsight_spans):
    llm = ScriptedLLM([turn(call("query_order", order_id=f"订单{i}")) for i in range(5)])
    result = react.ReactAgent(llm, [order_tool()], cfg(max_corrections=2)).run("where is my order?")
    assert result.termination_reason == "repeated_error" and result.fallback == "clarify"
    assert "query_order" in result.message
    assert len(tool_spans(loopsight_spans)) == 3 and llm.calls == 3
    assert run_span(loopsight_spans).attributes["loopsight.fallback"] == "clarify"


def test_missing_required_argument_falls_back_to_clarify_naming_it(loopsight_spans):
    llm = ScriptedLLM([turn(call("query_order"))] * 3)
    result = react.ReactAgent(llm, [order_tool()], cfg(max_corrections=2)).run("where is my order?")
    assert result.fallback == "clarify" and "order_id" in result.message


def test_unknown_tool_and_malformed_json_are_invalid_arguments(loopsight_spans):
    llm = ScriptedLLM(
        [
            turn(call("lookup_order", order_id="100234")),
            turn(call("query_order", raw='{"order_id": "100234"')),
            turn(call("query_order", order_id="100234")),
            "ok",
        ]
    )
    result = react.ReactAgent(llm, [order_tool()], cfg()).run("status?")
    unknown, malformed, _ = tool_messages(result)
    assert unknown["error_type"] == "UNKNOWN_TOOL" and unknown["available_tools"] == ["query_order"]
    assert malformed["error_type"] == "MALFORMED_ARGUMENTS" and "schema" in malformed
    spans = tool_spans(loopsight_spans)
    assert [s.attributes.get("loopsight.error.class") for s in spans] == ["invalid_argument", "invalid_argument", None]
    assert result.termination_reason == "completed"


def test_permanent_errors_are_structured_observations_and_not_retried(loopsight_spans):
    calls = []

    def missing(order_id: str) -> dict:
        calls.append(order_id)
        raise loopsight.PermanentToolError("no such order", error_type="not_found")

    llm = ScriptedLLM([turn(call("query_order", order_id="999999")), "I could not find that order."])
    result = react.ReactAgent(llm, [order_tool(missing)], cfg()).run("status?")
    (obs,) = tool_messages(result)
    assert obs["error_type"] == "NOT_FOUND" and "not the world" in obs["note"]
    assert "cancel" not in json.dumps(obs)
    assert calls == ["999999"]
    (span,) = tool_spans(loopsight_spans)
    assert span.attributes["loopsight.error.class"] == "permanent" and span.attributes["loopsight.tool.attempts"] == 1


def test_fatal_error_ends_the_run_with_a_permission_fallback(loopsight_spans):
    def forbidden(order_id: str) -> dict:
        raise PermissionError("403 forbidden")

    llm = ScriptedLLM([turn(call("query_order", order_id="100234")), "should not be asked"])
    result = react.ReactAgent(llm, [order_tool(forbidden)], cfg()).run("status?")
    assert (result.termination_reason, result.fallback, result.status) == ("fatal_error", "permission", "fallback")
    assert "permission" in result.message and llm.calls == 1
    run = run_span(loopsight_spans)
    assert run.attributes["loopsight.termination.reason"] == "fatal_error"
    assert run.attributes["loopsight.fallback"] == "permission"
    assert tool_spans(loopsight_spans)[0].attributes["loopsight.error.class"] == "fatal"


@pytest.mark.parametrize(
    ("page", "kind", "code"),
    [
        ({"content": "Please sign in to continue reading this article."}, "garbage", "login_wall"),
        ({"content": "该内容需要登录后查看。请登录。"}, "garbage", "login_wall"),
        ({"content": "Sponsored " + " ".join(f"https://ads.example/{i}" for i in range(8))}, "garbage", "ad_page"),
        ({"content": "404"}, "garbage", "too_short"),
        ({"url": "https://404.example/d", "content": "Not found"}, "garbage", "too_short"),
        ({"results": []}, "empty_result", "empty"),
        # bare strings: blank is empty and a login wall is one, but a short one is an answer (below)
        ("", "empty_result", "empty"),
        ("  \n ", "empty_result", "empty"),
        ("Please sign in to continue reading this article.", "garbage", "login_wall"),
        ("该内容需要登录后查看。请登录。", "garbage", "login_wall"),
    ],
)
def test_silent_failures_become_guidance_and_count_as_failures(loopsight_spans, page, kind, code):
    fetch = react.Tool(
        "fetch",
        lambda url: page,
        "Fetch a page.",
        {"type": "object", "required": ["url"], "properties": {"url": {"type": "string"}}},
    )
    llm = ScriptedLLM([turn(call("fetch", url="https://news.example/a")), "nothing usable"])
    result = react.ReactAgent(llm, [fetch], cfg()).run("summarise the article")
    (obs,) = tool_messages(result)
    assert obs["error_type"] == ("EMPTY_RESULT" if kind == "empty_result" else "GARBAGE_RESULT")
    assert obs["instruction"] and result.summary.tool_failures == 1 and result.partial_results == []
    (span,) = tool_spans(loopsight_spans)
    assert span.attributes["loopsight.error.class"] == kind and span.attributes["error.type"] == code
    assert not span.status.is_ok


@pytest.mark.parametrize("answers", [["42", "1024", "25.0"], ["Order 100234: shipped", "ok", "Paris"]])
def test_short_bare_string_results_are_answers_not_garbage(loopsight_spans, answers):
    given = iter(answers)
    calc = react.Tool(
        "calculator",
        lambda expr: next(given),
        "Evaluate an expression.",
        {"type": "object", "required": ["expr"], "properties": {"expr": {"type": "string"}}},
    )
    exprs = ["6*7", "2**10", "100/4"]
    llm = ScriptedLLM([turn(call("calculator", expr=e)) for e in exprs] + ["6*7=42, 2**10=1024, 100/4=25"])
    result = react.ReactAgent(llm, [calc], cfg()).run("Compute 6*7, 2**10 and 100/4")
    assert (result.termination_reason, result.summary.tool_failures) == ("completed", 0)
    assert tool_messages(result) == answers and [p["result"] for p in result.partial_results] == answers
    assert all(s.status.is_ok and "error.type" not in s.attributes for s in tool_spans(loopsight_spans))


class _Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("lazy row not loaded")

    __str__ = __repr__


class _UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("message not loaded")


@pytest.mark.parametrize("returned", [_Unprintable(), {"row": _Unprintable()}])
def test_a_result_that_cannot_be_rendered_is_a_tool_failure_the_model_sees(loopsight_spans, returned):
    other = react.Tool("other", lambda: "fine", "Other.")
    llm = ScriptedLLM([turn(call("query_order", order_id="100234")), turn(call("other")), "done"])
    result = react.ReactAgent(llm, [order_tool(lambda order_id: returned), other], cfg()).run("t")
    assert (result.status, result.termination_reason, result.error) == ("ok", "completed", None)
    assert result.answer == "done" and result.summary.tool_failures == 1
    first, second = tool_messages(result)
    assert first["error_type"] == "UNREADABLE_RESULT" and "lazy row not loaded" in first["message"]
    assert second == "fine"
    assert [p["tool"] for p in result.partial_results] == ["other"]
    failed, ok = tool_spans(loopsight_spans)
    assert not failed.status.is_ok and failed.attributes["error.type"] == "unreadable_result"
    assert failed.attributes["loopsight.error.class"] == "permanent" and ok.status.is_ok


def test_an_error_whose_message_cannot_be_rendered_is_still_a_tool_failure(loopsight_spans):
    def broken(order_id: str) -> dict:
        raise _UnprintableError()

    llm = ScriptedLLM([turn(call("query_order", order_id="100234")), "done"])
    result = react.ReactAgent(llm, [order_tool(broken)], cfg()).run("t")
    assert (result.status, result.termination_reason) == ("ok", "completed")
    (obs,) = tool_messages(result)
    assert obs["error_type"] == "_UNPRINTABLEERROR" and "unprintable" in obs["message"]


def test_max_steps_returns_partial_results(loopsight_spans):
    llm = ScriptedLLM(lambda m, t: turn(call("query_order", order_id=f"{100000 + len(m)}")))
    result = react.ReactAgent(llm, [order_tool()], cfg(max_steps=3)).run("check orders")
    assert result.termination_reason == "max_steps" and result.fallback == "partial_result"
    assert result.summary.steps == 3 and len(result.partial_results) == 3
    assert "What I could confirm" in result.message
    assert len(loopsight_spans.by_name("chat")) == 3
    assert run_span(loopsight_spans).attributes["loopsight.termination.reason"] == "max_steps"


def test_tool_call_budget_is_checked_before_a_turns_parallel_calls_run(loopsight_spans):
    executed = []

    def query_order(order_id: str) -> dict:
        executed.append(order_id)
        return {"order_id": order_id}

    llm = ScriptedLLM([turn(*(call("query_order", order_id=f"10000{i}") for i in range(5))), "done"])
    result = react.ReactAgent(llm, [order_tool(query_order)], cfg(max_tool_calls=3)).run("check 5 orders")
    assert result.termination_reason == "max_tool_calls" and len(executed) == 3
    assert len(tool_spans(loopsight_spans)) == 3 and result.summary.tool_calls == 3
    assert tool_messages(result)[-1]["error_type"] == "TOOL_BUDGET_EXHAUSTED"


def test_per_tool_budget(loopsight_spans):
    search = react.Tool(
        "search", lambda q: {"results": [q]}, "Search.", {"type": "object", "properties": {"q": {"type": "string"}}}
    )
    llm = ScriptedLLM(
        [
            turn(call("search", q="a"), call("search", q="b"), call("query_order", order_id="100234")),
            turn(call("search", q="c")),
            "done",
        ]
    )
    result = react.ReactAgent(llm, [search, order_tool()], cfg(max_calls_per_tool={"search": 2})).run("go")
    assert result.termination_reason == "max_tool_calls"
    assert result.summary.calls_per_tool == {"search": 2, "query_order": 1}
    assert len(tool_spans(loopsight_spans, "search")) == 2


def test_token_budget(loopsight_spans):
    llm = ScriptedLLM(lambda m, t: turn(call("query_order", order_id="100234")))
    llm_tokens = react.ReactConfig(max_tokens=600, retry=FAST)
    result = react.ReactAgent(llm, [order_tool()], llm_tokens).run("status?")
    assert result.termination_reason == "token_budget"
    assert result.summary.total_tokens <= 600
    chats = loopsight_spans.by_name("chat")
    used = sum(c.attributes["gen_ai.usage.input_tokens"] + c.attributes["gen_ai.usage.output_tokens"] for c in chats)
    assert used == result.summary.total_tokens
    assert run_span(loopsight_spans).attributes["loopsight.budget.max_tokens"] == 600


def test_exact_repeats_beyond_the_threshold_are_blocked_then_the_run_stops(loopsight_spans):
    executed = []

    def query_order(order_id: str) -> dict:
        executed.append(order_id)
        return {"order_id": order_id, "status": "processing"}

    llm = ScriptedLLM(lambda m, t: turn(call("query_order", order_id="100234")))
    result = react.ReactAgent(llm, [order_tool(query_order)], cfg(loop_hits_to_stop=2)).run("is it there yet?")
    assert len(executed) == 3  # threshold 3: the 4th and 5th identical calls are not executed
    assert result.termination_reason == "loop_detected" and result.fallback == "partial_result"
    blocked = [s for s in tool_spans(loopsight_spans) if "loopsight.loop.kind" in s.attributes]
    assert [s.attributes["loopsight.loop.kind"] for s in blocked] == ["exact", "exact"]
    assert any(e.name == "loop_detected" for e in blocked[0].events)
    assert tool_messages(result)[3]["error_type"] == "LOOP_DETECTED"


def test_oscillation_is_detected(loopsight_spans):
    track = react.Tool("track_parcel", lambda order_id: {"at": "hub"}, "Track.", ORDER_SCHEMA)
    script = [turn(call("query_order", order_id="100234")), turn(call("track_parcel", order_id="100234"))] * 3
    result = react.ReactAgent(ScriptedLLM(script), [order_tool(), track], cfg(loop_hits_to_stop=1)).run("where?")
    assert result.termination_reason == "loop_detected"
    kinds = [s.attributes.get("loopsight.loop.kind") for s in tool_spans(loopsight_spans)]
    assert kinds == [None, None, None, "oscillation"]


@pytest.mark.parametrize(
    ("first_result", "hint_word"),
    [({"results": []}, "returned nothing"), ({"results": ["Refunds take 5 days"]}, "Use them")],
)
def test_semantic_repeats_get_a_hint_that_depends_on_the_earlier_result(loopsight_spans, first_result, hint_word):
    search = react.Tool(
        "search",
        lambda q: first_result,
        "Search.",
        {"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}},
    )
    llm = ScriptedLLM(
        [
            turn(call("search", q="refund policy for damaged items")),
            turn(call("search", q="refund policy for damaged items?")),
            "done",
        ]
    )
    result = react.ReactAgent(llm, [search], cfg()).run("refunds?")
    obs = tool_messages(result)[1]
    assert obs["error_type"] == "LOOP_DETECTED" and obs["kind"] == "semantic" and hint_word in obs["instruction"]
    second = tool_spans(loopsight_spans)[1]
    assert second.attributes["loopsight.loop.kind"] == "semantic"
    assert second.attributes["loopsight.loop.similarity"] >= 0.88


SEARCH_SCHEMA = {"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}}


def test_semantic_guard_lets_another_identifier_through(loopsight_spans):
    executed: list[str] = []

    def search(q: str) -> dict:
        executed.append(q)
        return {"results": [{"title": f"Result for {q}", "snippet": "Paid on Monday."}]}

    queries = ["invoice INV-2024-0001", "invoice INV-2024-0002", "invoice INV-2024-0003", "status of order 100235"]
    queries.insert(3, "status of order 100234")
    llm = ScriptedLLM([turn(call("search", q=q)) for q in queries] + ["summary"])
    result = react.ReactAgent(llm, [react.Tool("search", search, "Search.", SEARCH_SCHEMA)], cfg()).run("invoices")
    assert (result.termination_reason, result.summary.loop_kinds) == ("completed", {})
    assert executed == queries
    assert all("loopsight.loop.kind" not in s.attributes for s in tool_spans(loopsight_spans))


@pytest.mark.parametrize(
    ("field", "positions"),
    [("page", [1, 2, 3]), ("offset", [0, 20, 40]), ("pageToken", [None, "eyJvZmZzZXQiOjIwfQ", "eyJvZmZzZXQiOjQwfQ"])],
)
def test_semantic_guard_takes_advancing_pagination_as_progress(loopsight_spans, field, positions):
    executed: list[Any] = []

    def list_orders(customer: str, page: int = 1, offset: int = 0, pageToken: str | None = None) -> dict:
        executed.append({"page": page, "offset": offset, "pageToken": pageToken}[field])
        return {"orders": [f"order {len(executed)}-{i} for {customer}" for i in range(3)], "next": "more"}

    schema = {"type": "object", "required": ["customer"], "properties": {"customer": {"type": "string"}}}
    calls = [{"customer": "ACME Corp"} | ({field: p} if p is not None else {}) for p in positions]
    llm = ScriptedLLM([turn(call("list_orders", **c)) for c in calls] + ["done"])
    tool = react.Tool("list_orders", list_orders, "List a customer's orders.", schema)
    result = react.ReactAgent(llm, [tool], cfg()).run("List all ACME orders")
    assert (result.termination_reason, result.summary.loop_kinds) == ("completed", {})
    assert executed == positions and len(tool_spans(loopsight_spans)) == 3


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"q": "refund policy for damaged items", "limit": 5}, {"q": "refund policy for damaged items", "limit": 10}),
        (
            {"q": "refund policy for damaged items", "fuzzy": True},
            {"q": "refund policy, damaged items", "fuzzy": False},
        ),
        ({"q": "refund policy for order 100234"}, {"q": "refund policy for order 100234?"}),
    ],
)
def test_semantic_guard_still_blocks_a_knob_tweak_or_a_rephrasing(loopsight_spans, first, second):
    executed: list[dict] = []

    def search(q: str, limit: int | None = None, fuzzy: bool | None = None) -> dict:
        args = {"q": q, "limit": limit, "fuzzy": fuzzy}
        executed.append({k: v for k, v in args.items() if v is not None})
        return {"results": ["Refunds take 5 days"]}

    llm = ScriptedLLM([turn(call("search", **first)), turn(call("search", **second)), "done"])
    result = react.ReactAgent(llm, [react.Tool("search", search, "Search.", SEARCH_SCHEMA)], cfg()).run("refunds?")
    assert executed == [first]
    assert tool_messages(result)[1]["kind"] == "semantic"
    assert tool_spans(loopsight_spans)[1].attributes["loopsight.loop.kind"] == "semantic"


def test_semantic_guard_uses_a_pluggable_embedder(loopsight_spans):
    search = react.Tool(
        "search", lambda q: {"results": [q]}, "Search.", {"type": "object", "properties": {"q": {"type": "string"}}}
    )
    same = GuardConfig(embedder=lambda text: [1.0, 0.0])  # everything is similar
    llm = ScriptedLLM(
        [turn(call("search", q="completely different one")), turn(call("search", q="nothing alike here")), "x"]
    )
    result = react.ReactAgent(llm, [search], cfg(guard=same)).run("q")
    assert tool_messages(result)[1]["kind"] == "semantic"


def test_the_same_error_three_times_in_a_row_ends_the_run_with_repeated_error(loopsight_spans):
    def missing(order_id: str) -> dict:
        raise loopsight.PermanentToolError("no such order", error_type="not_found")

    # the detection rule (docs/detection.md): same tool, same error.type, 3 in a row, whatever the arguments
    ids = iter(["999999", "999998", "999997", "999996"])
    llm = ScriptedLLM(lambda m, t: turn(call("query_order", order_id=next(ids))))
    result = react.ReactAgent(llm, [order_tool(missing)], cfg()).run("status?")
    assert result.termination_reason == "repeated_error" and result.fallback == "clarify"
    spans = tool_spans(loopsight_spans)
    assert len(spans) == 3 and [s.attributes.get("error.type") for s in spans] == ["not_found"] * 3
    assert [s.attributes.get("loopsight.loop.kind") for s in spans] == [None, None, "repeated_error"]
    assert run_span(loopsight_spans).attributes["loopsight.termination.reason"] == "repeated_error"


def test_a_run_the_guard_stops_on_repeated_error_is_a_repeated_error_loop_in_the_analytics(loopsight_spans, store):
    from loopsight import analytics
    from loopsight.ingest.pipeline import spans_to_request
    from loopsight.stores import ingest_request

    def missing(order_id: str) -> dict:
        raise loopsight.PermanentToolError("no such order", error_type="not_found")

    llm = ScriptedLLM([turn(call("query_order", order_id=f"99999{i}")) for i in range(4)])
    result = react.ReactAgent(llm, [order_tool(missing)], cfg()).run("status?")
    assert result.termination_reason == "repeated_error"
    ingest_request(store, spans_to_request(list(loopsight_spans.spans)))
    (loop,) = analytics.loops(store.reader())
    assert (loop["kind"], loop["tool"], loop["count"]) == ("repeated_error", "query_order", 3)


def test_a_success_or_another_error_type_breaks_the_repeated_error_streak(loopsight_spans):
    def flaky(order_id: str) -> dict:
        if order_id.endswith("0"):
            return {"order_id": order_id, "status": "shipped"}
        raise loopsight.PermanentToolError("no such order", error_type="not_found")

    ids = ["100001", "100002", "100000", "100003", "100004"]
    llm = ScriptedLLM([turn(call("query_order", order_id=i)) for i in ids] + ["done"])
    result = react.ReactAgent(llm, [order_tool(flaky)], cfg()).run("status?")
    assert result.termination_reason == "completed"  # not_found x2, ok, not_found x2: never 3 in a row


def test_exhausted_transient_failures_fall_back_to_retry_later(loopsight_spans):
    def down(order_id: str) -> dict:
        raise loopsight.TransientToolError("503", error_type="503")

    llm = ScriptedLLM([turn(call("query_order", order_id=f"10023{i}")) for i in range(3)])
    result = react.ReactAgent(llm, [order_tool(down, max_retries=1)], cfg()).run("status?")
    assert (result.termination_reason, result.fallback) == ("repeated_error", "retry_later")
    assert "query_order is not responding" in result.message


def test_context_modes_switch_to_compact_then_compress(loopsight_spans):
    page = "word " * 250  # ~250 tokens per observation
    fetch = react.Tool(
        "fetch",
        lambda url: {"content": f"{url} {page}"},
        "Fetch.",
        {"type": "object", "properties": {"url": {"type": "string"}}},
    )
    topics = iter(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"])
    llm = ScriptedLLM(lambda m, t: turn(call("fetch", url=f"{next(topics)}.example")) if len(m) < 20 else "done")
    config = cfg(context=react.ContextPolicy(window=1500, observation_chars=3000, compact_observation_chars=1500))
    result = react.ReactAgent(llm, [fetch], config).run("read all the docs")
    modes = result.summary.context_modes
    assert modes[0] == "normal" and "compact" in modes and "compress" in modes
    assert modes.index("compact") < modes.index("compress")
    chats = loopsight_spans.by_name("chat")
    assert [c.attributes["loopsight.context.mode"] for c in chats] == modes
    assert all(c.attributes["loopsight.context.tokens"] > 0 for c in chats)
    assert result.messages[1] == {"role": "user", "content": "read all the docs"}  # the task is kept
    assert result.messages[2]["content"].startswith("CONTEXT SUMMARY")
    assert any(m["content"] == "[compressed: see CONTEXT SUMMARY]" for m in result.messages if m["role"] == "tool")
    assert result.summary.peak_context_tokens < 1500 * 1.3


def test_context_compression_uses_a_pluggable_summarizer_and_counter(loopsight_spans):
    seen = []
    policy = react.ContextPolicy(
        window=100,
        counter=lambda msgs: 40 * len(msgs),
        summarizer=lambda obs: seen.append(len(obs)) or f"{len(obs)} results",
    )
    fetch = react.Tool(
        "fetch",
        lambda url: {"content": "useful text " * 5},
        "Fetch.",
        {"type": "object", "properties": {"url": {"type": "string"}}},
    )
    llm = ScriptedLLM(
        [turn(call("fetch", url="https://a.example/1")), turn(call("fetch", url="https://a.example/2")), "ok"]
    )
    result = react.ReactAgent(llm, [fetch], cfg(context=policy)).run("go")
    assert seen and result.messages[2]["content"].endswith("results")


def test_non_idempotent_tool_is_not_retried_after_a_timeout_without_a_key(loopsight_spans):
    calls = []

    def create_refund(order_id: str) -> dict:
        calls.append(order_id)
        raise TimeoutError("gateway timeout")

    refund = react.Tool("create_refund", create_refund, "Refund.", ORDER_SCHEMA, idempotent=False, max_retries=3)
    llm = ScriptedLLM([turn(call("create_refund", order_id="100234")), "could not refund"])
    result = react.ReactAgent(llm, [refund], cfg()).run("refund it")
    assert calls == ["100234"]
    (span,) = tool_spans(loopsight_spans)
    assert span.attributes["loopsight.tool.idempotent"] is False
    assert span.attributes["loopsight.tool.attempts"] == 1 and not [e for e in span.events if e.name == "retry"]
    assert tool_messages(result)[0]["error_type"] == "TOOL_RETRY_EXHAUSTED"


def test_keyed_non_idempotent_tool_is_retried_with_the_same_key_and_replayed(loopsight_spans):
    keys = []
    lock = threading.Lock()

    def create_refund(order_id: str, idempotency_key: str) -> dict:
        with lock:
            keys.append(idempotency_key)
            if len(keys) == 1:
                raise TimeoutError("gateway timeout")
        return {"refund_id": "R-1", "order_id": order_id}

    refund = react.Tool("create_refund", create_refund, "Refund.", ORDER_SCHEMA, idempotent=False)
    llm = ScriptedLLM(
        [
            turn(call("create_refund", order_id="100234")),
            turn(call("create_refund", order_id="100234")),
            "Refund R-1 created.",
        ]
    )
    result = react.ReactAgent(llm, [refund], cfg()).run("refund it")
    assert len(keys) == 2 and keys[0] == keys[1]  # one logical call, one key, retried
    first, second = tool_spans(loopsight_spans)
    assert first.attributes["loopsight.tool.attempts"] == 2
    assert first.attributes["loopsight.tool.idempotency_key"] == keys[0]
    assert second.attributes["loopsight.tool.replayed"] is True  # answered from the first result
    obs = tool_messages(result)
    assert obs[0] == obs[1] == {"refund_id": "R-1", "order_id": "100234"}


def test_model_transient_failure_is_retried_and_fatal_ends_the_run(loopsight_spans):
    llm = ScriptedLLM([loopsight.TransientToolError("overloaded", error_type="529"), "hello"])
    result = react.ReactAgent(llm, [], cfg()).run("hi")
    assert result.termination_reason == "completed" and result.summary.steps == 1
    chats = loopsight_spans.by_name("chat")
    assert [c.attributes["loopsight.step"] for c in chats] == [0, 0]
    assert chats[0].attributes["error.type"] == "529"
    loopsight_spans.clear()
    denied = ScriptedLLM([loopsight.FatalToolError("bad key", error_type="401")])
    result = react.ReactAgent(denied, [], cfg()).run("hi")
    assert (result.termination_reason, result.fallback) == ("fatal_error", "permission")


def test_model_failures_that_persist_end_with_error_not_an_exception(loopsight_spans):
    llm = ScriptedLLM([RuntimeError("boom")])
    result = react.ReactAgent(llm, [], cfg()).run("hi")
    assert result.status == "error" and result.termination_reason == "error" and "boom" in result.error
    assert run_span(loopsight_spans).attributes["loopsight.termination.reason"] == "error"


@pytest.mark.parametrize(
    ("error", "eclass", "grade", "told"),
    [
        (
            loopsight.PermanentToolError("model 'gpt-5o' does not exist", error_type="404"),
            "permanent",
            "clarify",
            "I could not finish this request (the model service (scripted-model) rejected the request). Could you",
        ),
        (
            loopsight.InvalidArgumentError("maximum context length exceeded", error_type="400"),
            "invalid_argument",
            "clarify",
            "I could not finish this request (the model service (scripted-model) rejected the request). Could you",
        ),
        (
            loopsight.TransientToolError("overloaded", error_type="503"),
            "transient",
            "retry_later",
            "I could not finish this request: the model service (scripted-model) is not responding. Please try again",
        ),
        (
            loopsight.TransientToolError("rate limit reached", error_type="429"),
            "transient",
            "retry_later",
            "I could not finish this request: the model service (scripted-model) is rate limiting requests. Please",
        ),
    ],
)
def test_a_model_error_falls_back_by_its_class_retry_later_only_when_transient(
    loopsight_spans, error, eclass, grade, told
):
    llm = ScriptedLLM([error] * 3)
    result = react.ReactAgent(llm, [], cfg(llm_max_retries=2)).run("Where is my order?")
    assert (result.status, result.termination_reason, result.fallback) == ("error", "error", grade)
    assert result.summary.error_classes == {eclass: 1 if eclass != "transient" else 3}
    assert run_span(loopsight_spans).attributes["loopsight.fallback"] == grade
    # the message names the class of failure, not "an internal error occurred"
    assert result.message.startswith(told) and "internal error" not in result.message


def test_an_internal_error_still_says_so(loopsight_spans):
    def broken_check(tool, result):
        raise RuntimeError("check broke")

    llm = ScriptedLLM([turn(call("query_order", order_id="100234")), "done"])
    result = react.ReactAgent(llm, [order_tool()], cfg(silent_checks=[broken_check])).run("Where is order 100234?")
    assert result.termination_reason == "error" and "an internal error occurred" in result.message


def test_a_tool_raising_value_error_is_spelled_as_the_decorators_spell_it(loopsight_spans):
    def query_order(order_id: str) -> dict:
        raise ValueError("order ids are six digits")

    llm = ScriptedLLM([turn(call("query_order", order_id="100234")), "sorry"])
    result = react.ReactAgent(llm, [order_tool(query_order)], cfg()).run("Where is order 100234?")
    (span,) = tool_spans(loopsight_spans, "query_order")
    assert span.attributes["error.type"] == "ValueError"
    assert span.attributes["loopsight.error.class"] == "invalid_argument"
    (observation,) = tool_messages(result)
    assert observation["error_type"] == "VALUEERROR"  # the model's code: the error.type in upper case

    loopsight_spans.clear()

    @loopsight.tool
    def decorated():
        raise ValueError("x")

    with pytest.raises(ValueError):
        decorated()
    (span,) = loopsight_spans.spans
    assert span.attributes["error.type"] == "ValueError"


def test_a_model_response_without_usage_continues_and_counts_only_known_tokens(loopsight_spans):
    class NoUsage:
        model = "local-llama"

        def __init__(self) -> None:
            self.turns = iter(
                [
                    LLMResponse(
                        tool_calls=[ToolCall("c1", "query_order", '{"order_id": "100234"}')],
                        input_tokens=None,
                        output_tokens=None,
                    ),
                    LLMResponse(content="Order 100234 has shipped.", input_tokens=120, output_tokens=None),
                ]
            )

        def complete(self, messages, tools) -> LLMResponse:
            return next(self.turns)

    result = react.ReactAgent(NoUsage(), [order_tool()], cfg(max_tokens=1000)).run("Where is order 100234?")
    assert (result.status, result.termination_reason) == ("ok", "completed")
    assert result.answer == "Order 100234 has shipped." and result.error is None
    assert (result.summary.input_tokens, result.summary.output_tokens, result.summary.total_tokens) == (120, 0, 120)
    first, second = loopsight_spans.by_name("chat local-llama")
    assert "gen_ai.usage.input_tokens" not in first.attributes and "gen_ai.usage.output_tokens" not in first.attributes
    assert second.attributes["gen_ai.usage.input_tokens"] == 120
    assert first.status.is_ok and second.status.is_ok


def test_arun_and_run_inside_a_running_loop(loopsight_spans):
    def make() -> react.ReactAgent:
        llm = ScriptedLLM([turn(call("query_order", order_id="100234")), "shipped"])
        return react.ReactAgent(llm, [order_tool()], cfg())

    async def main() -> tuple[react.RunResult, react.RunResult]:
        return await make().arun("a"), make().run("b")

    a, b = asyncio.run(main())
    assert a.termination_reason == b.termination_reason == "completed"
    assert len(loopsight_spans.by_name("invoke_agent")) == 2


def test_llm_without_acomplete_runs_in_a_thread(loopsight_spans):
    class Blocking:
        model = "blocking"

        def complete(self, messages, tools):
            return LLMResponse("done", [], 10, 2)

    result = react.ReactAgent(Blocking(), [], cfg()).run("x")
    assert result.answer == "done"
    (chat,) = loopsight_spans.by_name("chat blocking")
    assert chat.attributes["gen_ai.usage.input_tokens"] == 10


def test_bad_declarations_are_clear_errors():
    with pytest.raises(ValueError, match="two tools"):
        react.ReactAgent(ScriptedLLM([]), [order_tool(), order_tool()])
    with pytest.raises(TypeError, match="Tool"):
        react.ReactAgent(ScriptedLLM([]), [lambda: 1])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="max_steps"):
        react.ReactConfig(max_steps=0)
    with pytest.raises(ValueError, match="timeout"):
        react.Tool("t", lambda: 1, timeout=0)


def test_a_model_error_whose_message_cannot_be_rendered_is_still_reported_as_the_model_s(loopsight_spans):
    """The run's error text was made with ``f"{exc}"``: an exception whose ``__str__`` raises
    replaced the model's error by the formatting's own ("RuntimeError: message not loaded")."""
    result = react.ReactAgent(ScriptedLLM([_UnprintableError()]), [], cfg(llm_max_retries=0)).run("Where is my order?")
    assert (result.status, result.termination_reason) == ("error", "error")
    assert result.error is not None and result.error.startswith("model call failed: ")
    assert "unprintable _UnprintableError" in result.error
    assert run_span(loopsight_spans).attributes["loopsight.termination.reason"] == "error"


class _SloppyAdapter:
    """A hand-written adapter that fills the response loosely: no finish reason, float or negative counts."""

    model = "sloppy-model"

    def __init__(self, **usage: Any) -> None:
        self.usage = usage

    def complete(self, messages, tools) -> LLMResponse:
        return LLMResponse(content="The answer.", **self.usage)


@pytest.mark.parametrize(
    "usage",
    [{"finish_reason": None}, {"input_tokens": 12.0, "output_tokens": 3}, {"input_tokens": -1, "output_tokens": 3}],
)
def test_usage_an_adapter_got_wrong_never_fails_the_turn(loopsight_spans, usage, caplog):
    result = react.ReactAgent(_SloppyAdapter(**usage), [order_tool()], cfg()).run("Anything?")
    assert (result.status, result.termination_reason, result.answer) == ("ok", "completed", "The answer.")
    assert result.summary.input_tokens >= 0 and result.summary.input_tokens != 12
    (chat,) = loopsight_spans.by_name("chat sloppy-model")
    assert "gen_ai.usage.input_tokens" not in chat.attributes or chat.attributes["gen_ai.usage.input_tokens"] >= 0
    if "input_tokens" in usage:  # a count that is not one is said in the log; no finish reason is none
        assert "usage is not recorded" in caplog.text


def test_identical_calls_of_one_turn_run_one_after_the_other(loopsight_spans):
    """Calls a turn asks for at once start together; identical ones must still see each other:
    a non-idempotent one is executed once (the rest replay it), and the loop guard counts them."""
    charges: list[str] = []

    async def charge(order_id: str) -> dict:
        await asyncio.sleep(0.02)  # both calls are in flight together unless they wait for each other
        charges.append(order_id)
        return {"charge_id": f"C-{len(charges)}", "order_id": order_id}

    pay = react.Tool("charge", charge, "Charge.", ORDER_SCHEMA, idempotent=False)
    llm = ScriptedLLM([turn(call("charge", order_id="100234"), call("charge", order_id="100234")), "Charged."])
    result = react.ReactAgent(llm, [pay], cfg()).run("charge it")
    assert charges == ["100234"]
    assert tool_messages(result)[0] == tool_messages(result)[1] == {"charge_id": "C-1", "order_id": "100234"}
    assert [s.attributes.get("loopsight.tool.replayed") for s in tool_spans(loopsight_spans)].count(True) == 1

    loopsight_spans.clear()
    searched: list[str] = []
    llm = ScriptedLLM([turn(*[call("query_order", order_id="100234") for _ in range(6)]), "Shipped."])
    result = react.ReactAgent(llm, [order_tool(lambda order_id: searched.append(order_id) or {"ok": 1})], cfg()).run(
        "?"
    )
    blocked = [m for m in tool_messages(result) if isinstance(m, dict) and m.get("error_type") == "LOOP_DETECTED"]
    assert len(searched) == GuardConfig().exact_threshold and len(blocked) == 6 - len(searched)


def test_with_content_capture_each_model_turn_records_its_messages(loopsight_spans):
    from loopsight.instrumentation import content

    saved = content.SETTINGS.enabled
    content.set_capture(True)
    try:
        llm = ScriptedLLM([turn(call("query_order", order_id="100234")), "It shipped yesterday."])
        result = react.ReactAgent(llm, [order_tool()], cfg()).run("Where is order 100234?")
    finally:
        content.SETTINGS.enabled = saved
    assert result.termination_reason == "completed"
    first, second = sorted(loopsight_spans.by_name("chat scripted"), key=lambda s: s.start_time)
    assert "Where is order 100234?" in first.attributes["gen_ai.input.messages"]
    assert '"name":"query_order"' in first.attributes["gen_ai.output.messages"]
    assert '"role":"tool"' in second.attributes["gen_ai.input.messages"]  # the history the model was sent
    assert "It shipped yesterday." in second.attributes["gen_ai.output.messages"]
