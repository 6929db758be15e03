"""Exponential backoff with full jitter, honouring a server's ``retry_after``.

Example:
    >>> import random
    >>> policy = RetryPolicy(base=0.5, cap=8.0)
    >>> rng = random.Random(1)
    >>> 0.0 <= policy.delay(0, rng) <= 0.5
    True
    >>> policy.delay(3, rng, retry_after=2.0) >= 2.0
    True
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from loopsight import checks


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff settings (seconds).

    ``delay(attempt)`` is uniform in ``[0, min(cap, base * 2**attempt)]`` ("full
    jitter"); a ``retry_after`` from the error is a floor, itself capped by
    ``retry_after_cap`` so that a hostile header cannot park the run.
    """

    base: float = 0.5
    cap: float = 8.0
    retry_after_cap: float = 30.0

    def __post_init__(self) -> None:
        for name in ("base", "cap", "retry_after_cap"):
            checks.non_negative_number(name, getattr(self, name))

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` is 0-based)."""
        ceiling = min(self.cap, self.base * (2 ** min(attempt, 30)))
        jitter = rng.uniform(0.0, ceiling)
        if retry_after is not None and retry_after > 0:
            return max(min(float(retry_after), self.retry_after_cap), jitter)
        return jitter
