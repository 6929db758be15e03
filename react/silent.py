"""Silent-failure checks: results that succeeded but carry nothing usable.

A check is any callable ``(tool_name, result) -> SilentFailure | None``. The defaults
flag empty results (``None``, a blank string, an empty container or result list) and
three kinds of garbage pages: login walls (English and Chinese), link-dense ad pages,
and pages too short to hold an answer. The login-wall and ad-page checks look at ``str``
results and at the ``content``/``text``/``body``/``html``/``page`` field of ``dict``
results; the too-short check looks at that field only (a document: ``{"url": ...,
"content": "Not found"}``), since a short bare string is what many tools rightly answer
(a calculator's ``"42"``, ``"Order 100234: shipped"``). Structured records (an order, a
row) are only checked for emptiness.

Example:
    >>> checks = default_checks()
    >>> detect("search", {"results": []}, checks).kind
    'empty_result'
    >>> detect("fetch", {"content": "请登录后查看全文"}, checks).reason
    'login wall'
    >>> detect("query_order", {"status": "shipped"}, checks) is None
    True
    >>> detect("calculator", "42", checks) is None, detect("fetch", {"content": "404"}, checks).code
    (True, 'too_short')
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SilentFailure:
    """``kind`` is ``empty_result`` or ``garbage``; ``reason`` says why, for the model;
    ``code`` is the short ``error.type`` recorded on the span."""

    kind: str
    reason: str
    code: str = "garbage"


SilentCheck = Callable[[str, Any], "SilentFailure | None"]

LOGIN_WALL_PATTERNS: tuple[str, ...] = (
    r"\b(sign|log) ?in to (continue|read|view|see)",
    r"\bplease (sign|log) ?in\b",
    r"\blogin required\b",
    r"\byou must be (logged|signed) in\b",
    r"\bsubscribe to (continue|keep) reading\b",
    r"\bcreate (a free|an) account to (continue|read)",
    r"请(先)?登录",
    r"登录后(查看|继续|阅读|可见)",
    r"扫码登录",
    r"登录以(继续|查看)",
    r"注册/登录",
    r"会员专享",
)
AD_PATTERNS: tuple[str, ...] = (
    r"\bsponsored\b",
    r"\badvertisement\b",
    r"\bbuy now\b",
    r"\bclick here\b",
    r"广告",
    r"推广",
)
_LINK = re.compile(r"https?://\S+|\[[^\]]*\]\([^)]*\)|<a\s[^>]*>.*?</a>", re.IGNORECASE | re.DOTALL)
_TEXT_KEYS = ("content", "text", "body", "html", "page")
_LIST_KEYS = ("results", "items", "hits", "data", "documents")


def page_text(result: Any) -> str | None:
    """The page-like text of a result (a ``str`` result, or its document's text), or None for structured results."""
    if isinstance(result, str):
        return result
    return document_text(result)


def document_text(result: Any) -> str | None:
    """The text of a document result: the ``content``/``text``/``body``/``html``/``page`` field of a ``dict``."""
    if isinstance(result, dict):
        for key in _TEXT_KEYS:
            if isinstance(result.get(key), str):
                return result[key]
    return None


def is_empty(result: Any) -> bool:
    """None, a blank string, an empty container, or a dict whose result list is empty."""
    if result is None:
        return True
    if isinstance(result, str):
        return not result.strip()
    if isinstance(result, (list, tuple, set, dict)) and len(result) == 0:
        return True
    if isinstance(result, dict):
        lists = [result[k] for k in _LIST_KEYS if k in result]
        if lists and all(isinstance(v, (list, tuple)) and not v for v in lists):
            return True
    return False


def empty_check(tool: str, result: Any) -> SilentFailure | None:
    """Flag empty results."""
    return SilentFailure("empty_result", "no results", "empty") if is_empty(result) else None


def login_wall_check(max_chars: int = 1500, patterns: Sequence[str] = LOGIN_WALL_PATTERNS) -> SilentCheck:
    """Flag short pages that ask the reader to sign in (English and Chinese)."""
    compiled = [re.compile(p, re.IGNORECASE) for p in patterns]

    def check(tool: str, result: Any) -> SilentFailure | None:
        text = page_text(result)
        if text and len(text) <= max_chars and any(p.search(text) for p in compiled):
            return SilentFailure("garbage", "login wall", "login_wall")
        return None

    return check


def too_short_check(min_chars: int = 40, *, strings: bool = False) -> SilentCheck:
    """Flag a document's text shorter than ``min_chars`` once stripped (but not empty: that is
    another check). Only document results (:func:`document_text`) are checked, unless ``strings``:
    then bare ``str`` results too (for a page fetcher that returns the page as a bare string)."""
    text_of = page_text if strings else document_text

    def check(tool: str, result: Any) -> SilentFailure | None:
        text = text_of(result)
        if text is not None and text.strip() and len(text.strip()) < min_chars:
            return SilentFailure("garbage", f"page too short ({len(text.strip())} characters)", "too_short")
        return None

    return check


def link_density_check(
    max_density: float = 0.45, min_links: int = 5, ad_words: Sequence[str] = AD_PATTERNS
) -> SilentCheck:
    """Flag pages mostly made of links (share of characters inside links), or link lists with ad words."""
    ads = [re.compile(p, re.IGNORECASE) for p in ad_words]

    def check(tool: str, result: Any) -> SilentFailure | None:
        text = page_text(result)
        if not text:
            return None
        links = _LINK.findall(text)
        if len(links) < min_links:
            return None
        density = sum(len(link) for link in links) / max(len(text), 1)
        if density >= max_density or (density >= max_density / 2 and any(a.search(text) for a in ads)):
            return SilentFailure(
                "garbage", f"link-dense ad page ({len(links)} links, {density:.0%} of the text)", "ad_page"
            )
        return None

    return check


@dataclass(frozen=True)
class SilentConfig:
    """Thresholds of the default checks."""

    login_wall_max_chars: int = 1500
    min_page_chars: int = 40
    max_link_density: float = 0.45
    min_links: int = 5


def default_checks(config: SilentConfig | None = None) -> list[SilentCheck]:
    """The default check list, in the order they run."""
    c = config or SilentConfig()
    return [
        empty_check,
        login_wall_check(c.login_wall_max_chars),
        link_density_check(c.max_link_density, c.min_links),
        too_short_check(c.min_page_chars),
    ]


def detect(tool: str, result: Any, checks: Sequence[SilentCheck]) -> SilentFailure | None:
    """The first check that flags ``result``, or None."""
    for check in checks:
        hit = check(tool, result)
        if hit is not None:
            return hit
    return None
