"""Keep token counts single when another instrumentation's chat span nests in ours.

Official instrumentors (``opentelemetry-instrumentation-openai-v2``, OpenLLMetry, ...) emit
their own ``chat`` span with ``gen_ai.usage.*`` inside the function decorated with
``@loopsight.llm``. Summing both would double the tokens, so when such a child ends under
an open loopsight chat span, the loopsight span leaves its usage attributes out and says
``loopsight.usage.in_child=true`` instead. ``configure()`` and the pytest plugin install
this processor on the provider they use.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from loopsight import attributes as A

# span id of an open loopsight chat span -> its handle
OPEN_LLM: dict[int, Any] = {}
_USAGE_KEYS = (
    A.USAGE_INPUT_TOKENS,
    A.USAGE_OUTPUT_TOKENS,
    A.USAGE_PROMPT_TOKENS,
    A.USAGE_COMPLETION_TOKENS,
    "llm.token_count.prompt",
    "llm.token_count.completion",
)


class NestedUsageProcessor(SpanProcessor):
    """Tells an open loopsight chat span that a child span reported token usage."""

    def on_end(self, span: ReadableSpan) -> None:
        if not OPEN_LLM:
            return
        parent = span.parent
        if parent is None:
            return
        handle = OPEN_LLM.get(parent.span_id)
        if handle is None:
            return
        attrs = span.attributes or {}
        for key in _USAGE_KEYS:
            if key in attrs:
                handle.usage_in_child = True
                return


def install(provider: Any) -> None:
    """Add the processor to an SDK provider once."""
    if getattr(provider, "_loopsight_nesting", False):
        return
    add = getattr(provider, "add_span_processor", None)
    if add is None:
        return
    add(NestedUsageProcessor())
    provider._loopsight_nesting = True
