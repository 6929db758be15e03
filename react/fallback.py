"""Graded fallback: what a run that did not complete tells the user.

``choose`` picks the grade from what went wrong: ``permission`` for fatal errors,
``clarify`` when required arguments are missing or corrections ran out, ``partial_result``
when something was confirmed, ``retry_later`` for exhausted transient failures and time
limits, and ``clarify`` when nothing else applies (a model error the classifier calls
``permanent`` or ``invalid_argument``, such as a 404 for an unknown model or a 400 for a
context too long, is not something to retry later). ``message`` builds the user-facing text
from what is known.

Example:
    >>> facts = Facts(reason="max_steps", confirmed=[{"tool": "query_order",
    ...               "arguments": {"order_id": "100234"}, "result": "shipped"}])
    >>> choose(facts)
    'partial_result'
    >>> print(message("partial_result", facts))
    I could not finish this request (step limit reached). What I could confirm:
    - query_order(order_id=100234): shipped
    >>> choose(Facts(reason="error")), choose(Facts(reason="error", transient_exhausted=["the model service"]))
    ('clarify', 'retry_later')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopsight.react.context import truncate

REASON_TEXT = {
    "max_steps": "step limit reached",
    "max_tool_calls": "tool-call limit reached",
    "timeout": "time limit reached",
    "token_budget": "token budget exhausted",
    "loop_detected": "I was going in circles",
    "repeated_error": "the same error kept coming back",
    "fatal_error": "access was refused",
    "error": "an internal error occurred",
    "cancelled": "the request was cancelled",
}


@dataclass
class Facts:
    """What the loop knows when it stops."""

    reason: str
    confirmed: list[dict[str, Any]] = field(default_factory=list)
    fatal: str | None = None
    missing_arguments: list[str] = field(default_factory=list)
    corrections_exhausted: str | None = None
    transient_exhausted: list[str] = field(default_factory=list)
    model_failure: str | None = None
    """What the model service did when a model call ended the run (see :func:`model_failure`)."""


def model_failure(model: str | None, error_type: str, error_class: str) -> str:
    """The class of a model call's failure in the user's words, by its ``error.type`` and class.

    Example:
        >>> model_failure("gpt-4o", "429", "transient"), model_failure("gpt-4o", "404", "permanent")
        ('the model service (gpt-4o) is rate limiting requests', 'the model service (gpt-4o) rejected the request')
    """
    service = f"the model service ({model})" if model else "the model service"
    if error_type == "429":
        return f"{service} is rate limiting requests"
    if error_class == "transient":
        return f"{service} is not responding"
    if error_type.isdigit() and error_type.startswith("4"):
        return f"{service} rejected the request"
    return f"the call to {service} failed ({error_type})"


def choose(facts: Facts) -> str | None:
    """The fallback grade for a run that ended with ``facts.reason`` (None when completed)."""
    if facts.reason == "completed":
        return None
    if facts.fatal or facts.reason == "fatal_error":
        return "permission"
    if facts.missing_arguments or facts.corrections_exhausted:
        return "clarify"
    if facts.confirmed:
        return "partial_result"
    if facts.transient_exhausted or facts.reason == "timeout":
        return "retry_later"  # a run ended by an error that is not transient ("error") is not one of these
    return "clarify"


def message(fallback: str, facts: Facts) -> str:
    """A user-facing message for ``fallback`` built from the facts."""
    why = facts.model_failure or REASON_TEXT.get(facts.reason, facts.reason)
    if fallback == "permission":
        return (
            f"I don't have permission to complete this request ({facts.fatal or 'access denied'}). "
            "Please check your access rights or ask an administrator."
        )
    if fallback == "clarify":
        if facts.missing_arguments:
            return f"I need more information to continue: please provide {', '.join(facts.missing_arguments)}."
        if facts.corrections_exhausted:
            return (
                f"I could not form a valid request for {facts.corrections_exhausted}. "
                "Could you check the details you gave (for example the id format) and try again?"
            )
        return f"I could not finish this request ({why}). Could you rephrase it or narrow it down?"
    if fallback == "retry_later":
        if facts.model_failure:
            return f"I could not finish this request: {facts.model_failure}. Please try again in a few minutes."
        services = ", ".join(sorted(set(facts.transient_exhausted))) or "a service I depend on"
        return f"{services} is not responding right now ({why}). Please try again in a few minutes."
    lines = [f"I could not finish this request ({why}). What I could confirm:"]
    for item in facts.confirmed[:10]:
        args = ", ".join(f"{k}={v}" for k, v in (item.get("arguments") or {}).items())
        lines.append(f"- {item.get('tool')}({args}): {truncate(str(item.get('result', '')), 200)}")
    return "\n".join(lines)
