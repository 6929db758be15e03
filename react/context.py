"""Context budget: a token estimator and the compact/compress modes.

Messages are OpenAI chat-completions dicts. Each step the loop estimates the context
size; at ``compact_at`` of the window (default 65 %) tool observations are truncated
harder, at ``compress_at`` (85 %) old tool observations are replaced by one structured
summary from a summarizer callable, keeping the system prompt, the original task and the
model's own messages (tool messages stay, with a pointer to the summary, so the
transcript remains valid for chat-completions APIs).

Example:
    >>> estimate_tokens("hello world")
    2
    >>> estimate_tokens("订单状态")
    5
    >>> policy = ContextPolicy(window=1000)
    >>> policy.mode_for(500), policy.mode_for(700), policy.mode_for(900)
    ('normal', 'compact', 'compress')
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Message = dict[str, Any]
TokenCounter = Callable[[Sequence[Message]], int]
Summarizer = Callable[[Sequence[dict[str, Any]]], str]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"  # kana, CJK, hangul
_PIECE = re.compile(rf"[{_CJK}]|[A-Za-z]+|[0-9]+|\s+|[^\sA-Za-z0-9{_CJK}]+")
MESSAGE_OVERHEAD = 4
SUMMARY_HEADER = "CONTEXT SUMMARY (earlier tool results, compressed):"
SUMMARIZED_MARKER = "[compressed: see CONTEXT SUMMARY]"


def estimate_tokens(text: str) -> int:
    """Estimate BPE tokens (cl100k-like) of ``text`` without a tokenizer.

    A Latin word costs one token plus one per 4 letters beyond 8, a digit run one per 3
    digits, a run of punctuation one per 3 characters, a CJK character 1.2; whitespace
    folds into the next piece. Fitted on, and measured against, cl100k_base over the
    demo corpus (``bench/react_token_estimator.py``; figures in ``docs/react.md``).
    """
    total = 0.0
    for piece in _PIECE.findall(text):
        c = piece[0]
        if c.isspace():
            continue
        if c.isascii() and c.isalpha():
            total += 1 + max(0, len(piece) - 8) / 4
        elif c.isascii() and c.isdigit():
            total += math.ceil(len(piece) / 3)
        elif len(piece) == 1 and _is_cjk(c):
            total += 1.2
        else:
            total += math.ceil(len(piece) / 3)
    return round(total)


def _is_cjk(c: str) -> bool:
    return (
        "\u3040" <= c <= "\u30ff"
        or "\u3400" <= c <= "\u4dbf"
        or "\u4e00" <= c <= "\u9fff"
        or "\uf900" <= c <= "\ufaff"
        or "\uac00" <= c <= "\ud7af"
    )


def estimate_messages(messages: Sequence[Message]) -> int:
    """Estimated tokens of a chat transcript (content, tool calls, per-message overhead)."""
    total = 0
    for m in messages:
        total += MESSAGE_OVERHEAD
        content = m.get("content")
        if isinstance(content, str):
            total += estimate_tokens(content)
        for call in m.get("tool_calls") or ():
            fn = call.get("function", {})
            total += estimate_tokens(fn.get("name", "")) + estimate_tokens(fn.get("arguments", "") or "") + 3
    return total


def truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a marker saying how much was dropped."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[truncated {len(text) - limit} chars]"


def default_summarizer(observations: Sequence[dict[str, Any]]) -> str:
    """A structured, model-free summary: one line per earlier tool result."""
    lines = []
    for obs in observations:
        content = " ".join(str(obs.get("content", "")).split())
        lines.append(f"- {obs.get('tool')}({obs.get('arguments', '')}): {truncate(content, 160)}")
    return "\n".join(lines)


@dataclass
class ContextPolicy:
    """Window and mode thresholds; ``counter`` and ``summarizer`` are pluggable."""

    window: int = 16_000
    compact_at: float = 0.65
    compress_at: float = 0.85
    observation_chars: int = 4000
    compact_observation_chars: int = 600
    counter: TokenCounter = estimate_messages
    summarizer: Summarizer = default_summarizer

    def __post_init__(self) -> None:
        if not 0 < self.compact_at <= self.compress_at <= 1.5:
            raise ValueError("need 0 < compact_at <= compress_at")
        if self.window <= 0:
            raise ValueError("window must be > 0 tokens")

    def mode_for(self, tokens: int) -> str:
        """``normal``, ``compact`` or ``compress`` for a context of ``tokens``."""
        ratio = tokens / self.window
        if ratio >= self.compress_at:
            return "compress"
        if ratio >= self.compact_at:
            return "compact"
        return "normal"

    def observation_limit(self, mode: str) -> int:
        """How many characters of a new observation to keep in ``mode``."""
        return self.observation_chars if mode == "normal" else self.compact_observation_chars

    def prepare(self, messages: list[Message], summarized: list[dict[str, Any]]) -> tuple[str, int]:
        """Apply the mode the current size calls for, in place; return (mode, tokens after).

        ``summarized`` is the run's list of observations already compressed (kept by
        the caller so one policy can serve concurrent runs).
        """
        tokens = self.counter(messages)
        mode = self.mode_for(tokens)
        if mode == "normal":
            return mode, tokens
        _compact(messages, self.compact_observation_chars)
        if mode == "compress":
            tokens = self.counter(messages)
            if self.mode_for(tokens) == "compress":
                self._compress(messages, summarized)
        return mode, self.counter(messages)

    def _compress(self, messages: list[Message], summarized: list[dict[str, Any]]) -> None:
        last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
        calls = _tool_calls_by_id(messages)
        fresh = []
        for i, m in enumerate(messages):
            if m.get("role") == "tool" and i < last_assistant and m.get("content") != SUMMARIZED_MARKER:
                name, arguments = calls.get(m.get("tool_call_id", ""), (m.get("name", "?"), ""))
                fresh.append({"tool": name, "arguments": arguments, "content": m.get("content", "")})
                m["content"] = SUMMARIZED_MARKER
        if not fresh:
            return
        summarized.extend(fresh)
        summary = {"role": "user", "content": f"{SUMMARY_HEADER}\n{self.summarizer(list(summarized))}"}
        at = next((i for i, m in enumerate(messages) if m.get("role") == "user"), 0) + 1
        if at < len(messages) and str(messages[at].get("content", "")).startswith(SUMMARY_HEADER):
            messages[at] = summary
        else:
            messages.insert(at, summary)


def _compact(messages: list[Message], limit: int) -> None:
    for m in messages:
        if m.get("role") == "tool" and isinstance(m.get("content"), str) and len(m["content"]) > limit + 32:
            m["content"] = truncate(m["content"], limit)


def _tool_calls_by_id(messages: Sequence[Message]) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for m in messages:
        for call in m.get("tool_calls") or ():
            fn = call.get("function", {})
            out[call.get("id", "")] = (fn.get("name", "?"), fn.get("arguments", ""))
    return out


def dumps(value: Any) -> str:
    """Compact JSON for observations (non-ASCII kept readable)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
