"""Tool declarations for the ReAct loop: name, description, JSON schema and policy.

Example:
    >>> from loopsight import react
    >>> @react.tool_def(
    ...     description="Look an order up by its six-digit id.",
    ...     parameters={"type": "object", "required": ["order_id"],
    ...                 "properties": {"order_id": {"type": "string", "pattern": "^[0-9]{6}$"}}},
    ...     timeout=2.0, max_retries=2)
    ... def query_order(order_id: str) -> dict:
    ...     return {"order_id": order_id, "status": "shipped"}
    >>> query_order.name, query_order.idempotent
    ('query_order', True)
    >>> query_order.openai_spec()["function"]["name"]
    'query_order'
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, overload

from loopsight import checks

IDEMPOTENCY_KEY_PARAM = "idempotency_key"


@dataclass(frozen=True)
class Tool:
    """A tool the model may call.

    ``fn`` is called with the validated arguments as keyword arguments; it may be sync
    (run in a worker thread so that its timeout can be enforced) or async.
    ``idempotent=False`` means a timed-out call is never retried unless ``fn`` takes an
    ``idempotency_key`` keyword, which the loop generates once per logical call.
    ``timeout`` (seconds) is capped by the run's remaining wall-clock budget;
    ``max_retries`` counts retries after the first attempt, for transient errors only.
    """

    name: str
    fn: Callable[..., Any]
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    idempotent: bool = True
    max_retries: int = 2
    timeout: float | None = None

    def __post_init__(self) -> None:
        checks.text("a tool's name", self.name, empty=False)
        checks.function(f"tool {self.name!r}: fn", self.fn)
        checks.text(f"tool {self.name!r}: description", self.description)
        checks.instance(f"tool {self.name!r}: parameters", self.parameters, dict, hint=" (a JSON schema)")
        checks.flag(f"tool {self.name!r}: idempotent", self.idempotent)
        checks.non_negative_int(f"tool {self.name!r}: max_retries", self.max_retries)
        checks.positive_number(f"tool {self.name!r}: timeout", self.timeout, optional=True)

    @property
    def is_async(self) -> bool:
        """Whether ``fn`` is a coroutine function."""
        return inspect.iscoroutinefunction(self.fn)

    @property
    def takes_idempotency_key(self) -> bool:
        """Whether ``fn`` accepts an ``idempotency_key`` keyword argument."""
        try:
            params = inspect.signature(self.fn).parameters
        except (TypeError, ValueError):
            return False
        return IDEMPOTENCY_KEY_PARAM in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    @property
    def retry_safe(self) -> bool:
        """Whether a failed attempt may be repeated (idempotent, or keyed)."""
        return self.idempotent or self.takes_idempotency_key

    def openai_spec(self) -> dict[str, Any]:
        """The tool in OpenAI chat-completions ``tools`` format."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


@overload
def tool_def(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool_def(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: dict[str, Any] | None = None,
    idempotent: bool = True,
    max_retries: int = 2,
    timeout: float | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool_def(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: dict[str, Any] | None = None,
    idempotent: bool = True,
    max_retries: int = 2,
    timeout: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Declare a function as a :class:`Tool` (bare or parameterised).

    The name defaults to the function's name and the description to its docstring. What is not
    a function, or a setting of the wrong type, is refused here.
    """
    checks.function("tool_def's fn", fn, optional=True)

    def wrap(f: Callable[..., Any]) -> Tool:
        checks.function("tool_def's fn", f)
        return Tool(
            name=name or getattr(f, "__name__", None) or type(f).__name__,
            fn=f,
            description=description if description is not None else inspect.cleandoc(f.__doc__ or ""),
            parameters=parameters or {"type": "object", "properties": {}},
            idempotent=idempotent,
            max_retries=max_retries,
            timeout=timeout,
        )

    return wrap(fn) if fn is not None else wrap
