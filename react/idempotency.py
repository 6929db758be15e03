"""Idempotency keys and the once-per-run ledger of non-idempotent calls.

A key is generated once per logical call and reused across that call's retries, so a
keyed write tool can be retried after a timeout without being applied twice. A
repeated identical non-idempotent call in the same run is answered from the first
result instead of being executed again.

Example:
    >>> ledger = IdempotencyLedger(run_key="r1")
    >>> ledger.new_key()
    'r1-1'
    >>> ledger.remember("refund", "ab12", '{"ok": true}')
    >>> ledger.replay("refund", "ab12")
    '{"ok": true}'
    >>> ledger.replay("refund", "ffff") is None
    True
"""

from __future__ import annotations

import itertools
import uuid


class IdempotencyLedger:
    """Keys and first results of the non-idempotent calls of one run."""

    def __init__(self, run_key: str | None = None) -> None:
        self._run_key = run_key or uuid.uuid4().hex[:16]
        self._counter = itertools.count(1)
        self._results: dict[tuple[str, str], str] = {}

    def new_key(self) -> str:
        """A fresh key for one logical call (stable across its retries)."""
        return f"{self._run_key}-{next(self._counter)}"

    def remember(self, tool: str, args_hash: str, observation: str) -> None:
        """Keep the observation of the first successful execution of (tool, args)."""
        self._results.setdefault((tool, args_hash), observation)

    def replay(self, tool: str, args_hash: str) -> str | None:
        """The first observation of an identical earlier call, if there was one."""
        return self._results.get((tool, args_hash))
