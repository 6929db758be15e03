"""loopsight never breaks the application: its own failures are logged once and swallowed,
user exceptions propagate unchanged, and tracing off costs nothing but a call."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys

import pytest
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.trace import NoOpTracer

import loopsight
from loopsight.instrumentation import state as state_mod
from loopsight.instrumentation.state import STATE


class ExplodingProcessor(SpanProcessor):
    """A broken exporter pipeline: fails on every span start and end."""

    def on_start(self, span, parent_context=None):
        raise RuntimeError("processor start broke")

    def on_end(self, span):
        raise RuntimeError("processor end broke")


class ExplodingTracer(NoOpTracer):
    def start_span(self, *args, **kwargs):
        raise RuntimeError("tracer broke")


class ExplodingProvider(TracerProvider):
    def get_tracer(self, *args, **kwargs):
        return ExplodingTracer()


@pytest.fixture
def provider_swap():
    saved = STATE.provider
    STATE._logged.clear()
    yield
    STATE.provider = saved
    STATE._logged.clear()


def _exercise():
    @loopsight.tool
    def ok(x):
        return x + 1

    @loopsight.llm(model="m")
    async def model():
        return {"usage": {"prompt_tokens": 1}}

    @loopsight.agent
    def gen():
        yield 1
        yield 2

    assert ok(1) == 2
    assert asyncio.run(model()) == {"usage": {"prompt_tokens": 1}}
    assert list(gen()) == [1, 2]
    with loopsight.agent("a") as run:
        run.terminate("max_steps")
        with loopsight.tool("t", args={"a": 1}) as t:
            t.retry(TimeoutError())
            t.mark("garbage")
            t.loop_detected("exact", similarity=0.9)
    err = KeyError("mine")
    with pytest.raises(KeyError) as info, loopsight.tool("t"):
        raise err
    assert info.value is err


@pytest.mark.parametrize(
    "provider_factory",
    [
        lambda: ExplodingProvider(),
        lambda: _with_processor(TracerProvider(), ExplodingProcessor()),
    ],
)
def test_broken_tracing_never_reaches_the_app(provider_swap, caplog, provider_factory):
    STATE.provider = provider_factory()
    with caplog.at_level(logging.WARNING, logger="loopsight"):
        _exercise()
        _exercise()
    messages = [r.getMessage() for r in caplog.records if r.name == "loopsight"]
    assert messages, "internal errors are logged"
    assert len(messages) == len(set(messages)), "each internal error is logged once"


def _with_processor(provider, processor):
    provider.add_span_processor(processor)
    return provider


def test_failing_check_is_swallowed_and_bad_vocabulary_refused(loopsight_spans, caplog):
    STATE._logged.clear()

    @loopsight.tool(check=lambda r: r["missing"])
    def f():
        return {}

    with caplog.at_level(logging.WARNING, logger="loopsight"):
        assert f() == {}  # the user's check failed at call time: logged, the call goes on
    assert any("KeyError" in r.getMessage() for r in caplog.records)
    # a wrong argument to a loopsight method is the caller's error: refused, listing the values
    with pytest.raises(ValueError, match="reason must be one of completed, max_steps"), loopsight.agent("a") as run:
        run.terminate("because")
    _tool_span, agent_span = loopsight_spans.spans
    assert agent_span.attributes["loopsight.termination.reason"] == "error"
    STATE._logged.clear()


def test_handles_after_end_do_nothing(loopsight_spans):
    with loopsight.tool("t") as t:
        pass
    t.retry("x")
    t.fail("y")
    t.set_attribute("k", "v")
    (span,) = loopsight_spans.spans
    assert "k" not in span.attributes and not span.events


def test_disabled_switch(loopsight_spans, monkeypatch):
    monkeypatch.setenv("LOOPSIGHT_DISABLED", "1")
    state_mod.refresh_from_env()
    try:

        @loopsight.tool
        def f(x):
            return x

        @loopsight.agent
        async def a():
            return loopsight.current_run()

        assert f(3) == 3
        assert asyncio.run(a()).recording is False
        with loopsight.agent("x") as run:
            run.terminate("max_steps")
        assert loopsight_spans.spans == []
    finally:
        monkeypatch.delenv("LOOPSIGHT_DISABLED")
        state_mod.refresh_from_env()
    f(1)
    assert len(loopsight_spans.spans) == 1


def test_disabled_from_environment_in_a_fresh_process():
    code = (
        "import loopsight\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
        "exp = InMemorySpanExporter()\n"
        "p = loopsight.configure(exporter=exp, batch=False)\n"
        "@loopsight.tool\n"
        "def f(x): return x\n"
        "assert f(2) == 2\n"
        "print(len(exp.get_finished_spans()))\n"
    )
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    on = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    off = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**env, "LOOPSIGHT_DISABLED": "1"}, timeout=60
    )
    assert (on.stdout.strip(), off.stdout.strip()) == ("1", "0"), on.stderr + off.stderr


def test_a_malformed_environment_variable_does_not_stop_the_agent_importing():
    """``LOOPSIGHT_CONTENT_MAX_LENGTH=4k`` made ``import loopsight`` raise ValueError."""
    code = "import loopsight; from loopsight.instrumentation.content import SETTINGS; print(SETTINGS.max_length)"
    env = {"LOOPSIGHT_CONTENT_MAX_LENGTH": "4k", "PATH": ""}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["4096"]
    assert "LOOPSIGHT_CONTENT_MAX_LENGTH='4k' is not an integer; using 4096" in done.stderr


def test_a_service_name_that_is_not_utf8_does_not_lose_every_batch():
    """``OTEL_SERVICE_NAME`` of bytes that are not UTF-8 reaches Python as a lone surrogate: the
    resource could not be encoded, so the OTLP exporter dropped every batch."""
    import os

    code = (
        "import loopsight\n"
        "from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
        "exp = InMemorySpanExporter()\n"
        "loopsight.configure(exporter=exp, batch=False)\n"
        "@loopsight.tool\n"
        "def f(x): return x\n"
        "f(1)\n"
        "body = encode_spans(exp.get_finished_spans()).SerializeToString()\n"
        "print(exp.get_finished_spans()[0].resource.attributes['service.name'].encode('utf-8'), len(body) > 0)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPSIGHT_", "OTEL_"))}
    env["OTEL_SERVICE_NAME"] = os.fsdecode(b"agent-\xff")  # passed on as the raw bytes
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["b'agent-\\xef\\xbf\\xbd'", "True"], done.stdout
