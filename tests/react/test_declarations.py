"""The ReAct loop's settings, tools and tasks are checked when given, naming the field: never a
run that fails as an "internal error" or runs without a limit (review 2027-01)."""

from __future__ import annotations

import pytest

from loopsight import react
from loopsight.react.llm import ScriptedLLM


@react.tool_def
def lookup() -> str:
    """Look something up."""
    return "found"


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"max_steps": "10"}, TypeError, "max_steps must be an integer"),
        ({"max_steps": None}, TypeError, "max_steps must be an integer"),
        ({"max_steps": 2.5}, TypeError, "max_steps must be an integer"),
        ({"max_steps": True}, TypeError, "max_steps must be an integer"),
        ({"max_tokens": 0}, ValueError, "max_tokens must be >= 1"),
        ({"max_calls_per_tool": 5}, TypeError, "max_calls_per_tool must be a mapping"),
        ({"max_calls_per_tool": {"lookup": -1}}, ValueError, r"max_calls_per_tool\['lookup'\] must be >= 0"),
        ({"max_calls_per_tool": {"lookup": "2"}}, TypeError, r"max_calls_per_tool\['lookup'\] must be an integer"),
        ({"default_max_calls_per_tool": -1}, ValueError, "default_max_calls_per_tool must be >= 0"),
        ({"max_seconds": float("nan")}, ValueError, "max_seconds must be a finite number > 0"),
        ({"max_seconds": float("inf")}, ValueError, "max_seconds must be a finite number > 0"),
        ({"default_tool_timeout": "3"}, TypeError, "default_tool_timeout must be a number"),
        ({"deadline_share": 1.5}, ValueError, r"deadline_share must be in \(0, 1\]"),
        ({"llm_max_retries": -1}, ValueError, "llm_max_retries must be >= 0"),
        ({"loop_hits_to_stop": 0}, ValueError, "loop_hits_to_stop must be >= 1"),
        ({"retry": None}, TypeError, "retry must be a RetryPolicy"),
        ({"guard": 5}, TypeError, "guard must be a GuardConfig"),
        ({"context": {}}, TypeError, "context must be a ContextPolicy"),
        ({"silent_checks": None}, TypeError, "silent_checks must be a list"),
        ({"silent_checks": ["empty"]}, TypeError, r"silent_checks\[0\] must be callable"),
        ({"system_prompt": None}, TypeError, "system_prompt must be a str"),
    ],
)
def test_react_config_fields_are_checked(kwargs, error, message):
    with pytest.raises(error, match=message):
        react.ReactConfig(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"base": "x"}, TypeError, "base must be a number"),
        ({"cap": -1}, ValueError, "cap must be a finite number >= 0"),
        ({"retry_after_cap": float("nan")}, ValueError, "retry_after_cap must be a finite number >= 0"),
    ],
)
def test_retry_policy_fields_are_checked(kwargs, error, message):
    with pytest.raises(error, match=message):
        react.RetryPolicy(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"timeout": "3"}, TypeError, "tool 'f': timeout must be a number"),
        ({"timeout": float("nan")}, ValueError, "tool 'f': timeout must be a finite number > 0"),
        ({"max_retries": 1.5}, TypeError, "tool 'f': max_retries must be an integer"),
        ({"parameters": "x"}, TypeError, r"tool 'f': parameters must be a dict \(a JSON schema\)"),
        ({"idempotent": "no"}, TypeError, "tool 'f': idempotent must be True or False"),
        ({"description": 5}, TypeError, "tool 'f': description must be a str"),
        ({"name": 5}, TypeError, "a tool's name must be a str"),
    ],
)
def test_tool_def_settings_are_checked(kwargs, error, message):
    def f():
        return 1

    with pytest.raises(error, match=message):
        react.tool_def(**kwargs)(f)


def test_tool_def_needs_a_function():
    with pytest.raises(TypeError, match="tool_def's fn must be callable, got 5"):
        react.tool_def(5)  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("tools", "config", "message"),
    [
        (lookup, None, r"tools must be a list of Tool, got the single tool 'lookup': pass \[lookup\]"),
        ([lookup, "lookup"], None, r"tools\[1\] must be a Tool \(declare it with react.tool_def\)"),
        ([lookup], {"max_steps": 3}, "config must be a ReactConfig"),
    ],
)
def test_agent_declarations_are_checked(tools, config, message):
    with pytest.raises(TypeError, match=message):
        react.ReactAgent(ScriptedLLM(["hi"]), tools, config)


@pytest.mark.parametrize(("task", "error"), [(None, TypeError), (5, TypeError), ("", ValueError), ("  ", ValueError)])
def test_a_task_must_be_text(loopsight_spans, task, error):
    agent = react.ReactAgent(ScriptedLLM(["hi"]), [lookup])
    with pytest.raises(error, match="task must be a"):
        agent.run(task)
    assert not loopsight_spans.spans  # refused before any run began


def test_valid_settings_still_run(loopsight_spans):
    config = react.ReactConfig(
        max_steps=3, max_seconds=5, max_calls_per_tool={"lookup": 0}, default_max_calls_per_tool=2, seed=1
    )
    result = react.ReactAgent(ScriptedLLM(["hi"]), (lookup,), config).run("say hi")
    assert result.answer == "hi"
    (run,) = loopsight_spans.by_name("invoke_agent")
    assert run.attributes["loopsight.budget.max_seconds"] == 5.0 and run.attributes["loopsight.budget.max_steps"] == 3
