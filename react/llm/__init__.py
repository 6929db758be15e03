"""Model adapters for the ReAct loop: a scripted LLM and an OpenAI-compatible client."""

from loopsight.react.llm.base import LLM, LLMResponse, ToolCall
from loopsight.react.llm.openai import OpenAIChat
from loopsight.react.llm.scripted import ScriptedLLM, answer, call, turn

__all__ = ["LLM", "LLMResponse", "OpenAIChat", "ScriptedLLM", "ToolCall", "answer", "call", "turn"]
