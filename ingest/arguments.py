"""A tool call's arguments as the model gave them, out of each producer's wrapping.

Producers record more than the arguments: smolagents and the Langfuse SDK wrap them as
``{"args": [...], "kwargs": {...}}``, LlamaIndex as ``{"kwargs": {...}}``, OpenLLMetry's
LangChain instrumentation sends the whole callback payload (``input_str`` as Python text,
``inputs``, plus ``tags``, ``metadata`` with a per-call checkpoint id and ``kwargs`` with the
call id). Hashing that would give every call its own hash and hide every loop; hashing the
arguments alone finds them.

Example:
    >>> call_arguments('{"args": [], "sanitize_inputs_outputs": true, "kwargs": {"city": "Paris"}}')
    '{"city":"Paris"}'
    >>> call_arguments('{"input_str": "{\\'query\\': \\'tokyo\\'}", "tags": [], "metadata": {"checkpoint_ns": "x"}}')
    '{"query":"tokyo"}'
    >>> call_arguments("not json")
    'not json'
"""

from __future__ import annotations

import ast
import json
from typing import Any

from loopsight.hashing import canonical_json
from loopsight.ingest.features import NOT_JSON

_WRAPPER_KEYS = frozenset(("args", "kwargs", "sanitize_inputs_outputs"))
_CALLBACK_KEYS = frozenset(("input_str", "inputs", "tags", "metadata", "kwargs"))


def _unwrapped(value: Any) -> Any:
    if not isinstance(value, dict) or not value:
        return value
    keys = value.keys()
    if "input_str" in value and keys <= _CALLBACK_KEYS:  # OpenLLMetry's LangChain callback payload
        inputs = value.get("inputs")
        if isinstance(inputs, dict) and inputs:
            return inputs
        text = value["input_str"]
        if isinstance(text, str):
            try:
                return ast.literal_eval(text)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # {[1]: 2}: unhashable
                return text
        return text
    if "kwargs" in value and keys <= _WRAPPER_KEYS:  # smolagents, Langfuse, LlamaIndex
        args, kwargs = value.get("args") or [], value.get("kwargs") or {}
        if not args:
            return kwargs
        return {"args": args, **kwargs} if isinstance(kwargs, dict) else [args, kwargs]
    return value


def call_arguments(text: str) -> str:
    """The canonical JSON of the arguments inside a producer's argument text (the text itself
    when it is not JSON)."""
    return parsed_call_arguments(text)[0]


def parsed_call_arguments(text: str) -> tuple[str, Any]:
    """:func:`call_arguments` and that text's ``json.loads`` (:data:`NOT_JSON` when it is not
    JSON): text a producer sent unwrapped, the usual case, is parsed once for the unwrapping, the
    args hash and the argument features.

    Example:
        >>> parsed_call_arguments('{"kwargs": {"city": "Paris"}}'), parsed_call_arguments("x")[1] is NOT_JSON
        (('{"city":"Paris"}', {'city': 'Paris'}), True)
    """
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text, NOT_JSON
    unwrapped = _unwrapped(value)
    if unwrapped is value:
        return text, value
    canonical = canonical_json(unwrapped)
    try:
        return canonical, json.loads(canonical)  # the canonical text's own value (tuples, sets, keys made text)
    except (ValueError, RecursionError):
        return canonical, NOT_JSON
