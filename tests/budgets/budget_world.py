"""The budget advisor's test store: runs whose replay answers are worked out by hand below.

Every step i (1-based) of a run spends 100·i input + 10 output tokens (110, 210, 310, ...), a 5 ms
model call and, when it asks for one, a 10 ms tool call; a run ends 1 ms after its last step. So a
step's start is 15 ms after the previous one's when that one called a tool.

| runs | agent   | service | steps | tool calls (one per step but the last) | tokens | ms  | ends                  | outcome |
|------|---------|---------|-------|-----------------------------------------|--------|-----|-----------------------|---------|
| 10   | planner | svc-a   | 2     | 1                                       | 320    | 21  | completed             | ok      |
| 9    | planner | svc-a   | 3     | 2                                       | 630    | 36  | completed             | ok      |
| 1    | planner | svc-b   | 5     | 4                                       | 1550   | 66  | completed             | ok      |
| 2    | planner | svc-a   | 8     | 8 (search, same arguments: exact loop)  | 3680   | 121 | loop_detected         | looped  |
| 1    | planner | svc-a   | 6     | 6 (different arguments)                 | 2160   | 91  | max_steps             | budget  |
| 1    | planner | svc-a   | 4     | 4                                       | 1040   | 61  | error (status Error)  | failed  |
| 1    | planner | svc-a   | 1     | 1                                       | 110    | 16  | cancelled (Error)     | other   |
| 3    | tiny    | svc-a   | 2     | 1                                       | 320    | 21  | completed             | ok      |

planner: 25 runs, 20 ok, 4 bad (2 looped, 1 budget, 1 failed), 1 other; bad tokens
2·3680 + 2160 + 1040 = 10560. The runs that call a tool in every step give step k (1-based)
calls_before = k - 1, tokens_before = 100·k(k-1)/2 + 10(k-1), start = 15(k - 1) ms.
"""

from __future__ import annotations

from datetime import timedelta

from analytics_fixture import T0, Call, Recorder, RunInfo, Step

BAD_TOKENS = 10560


def tokens(step: int) -> int:
    """Input + output tokens of step ``step`` (1-based)."""
    return 100 * step + 10


def steps(count: int, *, calls_in_last: bool = False, same: bool = False) -> list[Step]:
    out = []
    for i in range(1, count + 1):
        calls = [] if i == count and not calls_in_last else [Call("search", "same" if same else f"q{i}")]
        out.append(Step(100 * i, 10, calls))
    return out


def record(recorder: Recorder) -> dict[str, list[RunInfo]]:
    """Record the table above; the runs by kind."""
    at = iter(T0 + timedelta(minutes=i) for i in range(1000))
    runs: dict[str, list[RunInfo]] = {}

    def add(kind: str, agent: str = "planner", **kw: object) -> None:
        runs.setdefault(kind, []).append(recorder.run(agent=agent, start=next(at), **kw))  # type: ignore[arg-type]

    for _ in range(10):
        add("ok2", steps=steps(2))
    for _ in range(9):
        add("ok3", steps=steps(3))
    add("ok5", steps=steps(5), service="svc-b")
    for _ in range(2):
        add("looped", steps=steps(8, calls_in_last=True, same=True), termination="loop_detected")
    add("budget", steps=steps(6, calls_in_last=True), termination="max_steps")
    add("failed", steps=steps(4, calls_in_last=True), termination="error", error=True)
    # status Error, as the decorators send a cancelled run: still "other", not "failed"
    add("other", steps=steps(1, calls_in_last=True), termination="cancelled", error=True)
    for _ in range(3):
        add("tiny", agent="tiny", steps=steps(2))
    return runs
