"""Property tests on the budget invariants, over random scripts and budgets."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import loopsight
from loopsight import attributes as A
from loopsight import react
from loopsight.instrumentation.state import STATE
from loopsight.instrumentation.testing import CapturedSpans
from loopsight.react.llm import ScriptedLLM, call, turn
from loopsight.react.retry import RetryPolicy

SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}}


def _tools() -> list[react.Tool]:
    def ok(x: int = 0) -> dict:
        return {"x": x, "ok": True}

    def flaky(x: int = 0) -> dict:
        if x % 2:
            raise TimeoutError("slow")
        return {"x": x}

    def write(x: int = 0) -> dict:
        if x % 3 == 0:
            raise loopsight.TransientToolError("gateway 503", error_type="503")
        return {"written": x}

    def keyed_write(x: int = 0, idempotency_key: str = "") -> dict:
        if x % 2:
            raise TimeoutError("slow")
        return {"written": x}

    return [
        react.Tool("ok", ok, parameters=SCHEMA),
        react.Tool("flaky", flaky, parameters=SCHEMA, max_retries=2),
        react.Tool("write", write, parameters=SCHEMA, idempotent=False, max_retries=3),
        react.Tool("keyed_write", keyed_write, parameters=SCHEMA, idempotent=False, max_retries=2),
    ]


calls = st.tuples(st.sampled_from(["ok", "flaky", "write", "keyed_write", "nope"]), st.integers(0, 5))
turns = st.lists(st.lists(calls, min_size=1, max_size=4), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=turns,
    max_steps=st.integers(1, 8),
    max_tool_calls=st.integers(1, 10),
    per_tool=st.one_of(st.none(), st.integers(0, 3)),
    max_tokens=st.integers(200, 5000),
)
def test_budgets_are_never_exceeded(script, max_steps, max_tool_calls, per_tool, max_tokens):
    captured = CapturedSpans()
    saved = (STATE.provider, STATE.clock)
    STATE.provider, STATE.clock = captured.provider, captured.clock
    try:
        llm = ScriptedLLM([turn(*(call(n, x=x) for n, x in t)) for t in script] + ["done"])
        config = react.ReactConfig(
            max_steps=max_steps,
            max_tool_calls=max_tool_calls,
            max_tokens=max_tokens,
            default_max_calls_per_tool=per_tool,
            retry=RetryPolicy(base=0.0005, cap=0.001),
            loop_hits_to_stop=50,
        )
        result = react.ReactAgent(llm, _tools(), config).run("go")
    finally:
        STATE.provider, STATE.clock = saved
    s = result.summary
    tools = captured.by_name("execute_tool")
    assert result.termination_reason in A.TERMINATION_REASONS
    assert len(tools) == s.tool_calls <= max_tool_calls
    assert s.steps <= max_steps and len({c.attributes[A.STEP] for c in captured.by_name("chat")}) == s.steps
    assert s.total_tokens <= max_tokens or result.termination_reason == "token_budget"
    if per_tool is not None:
        per_name: dict[str, int] = {}
        for span in tools:
            per_name[span.attributes[A.TOOL_NAME]] = per_name.get(span.attributes[A.TOOL_NAME], 0) + 1
        assert all(n <= per_tool for n in per_name.values())
    for span in tools:
        retried = any(e.name == "retry" for e in span.events)
        if span.attributes[A.TOOL_NAME] == "write":  # non-idempotent, takes no key: never retried
            assert not retried and span.attributes[A.TOOL_ATTEMPTS] == 1
        if retried:
            assert span.attributes[A.TOOL_NAME] in ("flaky", "keyed_write")
    (run,) = captured.by_name("invoke_agent")
    assert run.attributes[A.TERMINATION_REASON] == result.termination_reason
    if result.termination_reason != "completed":
        assert result.fallback in A.FALLBACKS and result.message
