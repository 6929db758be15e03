"""One small store shared by the analytics tests; every expected answer follows from it.

Windows: previous day [T0, T0+1d), current day [T0+1d, T0+2d), and one run after both.

Status is 'error' exactly where the run span failed; a run succeeded when it completed and did
not fail.

| run | agent   | service | start       | termination  | span  | status | succeeded | tokens | tools (error class, attempts)                 |
|-----|---------|---------|-------------|--------------|-------|--------|-----------|--------|-----------------------------------------------|
| P1  | orders  | svc-a   | T0+1h       | completed    | ok    | ok     | yes       | 55     | search                                        |
| P2  | billing | svc-b   | T0+2h       | timeout      | error | error  | no        | 77     | refund (transient)                            |
| R1  | orders  | svc-a   | T0+25h      | completed    | ok    | ok     | yes       | 1100   | search, lookup (transient, 3), search (sub-agent) |
| R2  | orders  | svc-a   | T0+26h      | loop_detected| ok    | ok     | no        | 495    | search x3, the third marked loop_kind=exact    |
| R3  | billing | svc-b   | T0+27h      | completed    | error | error  | no        | 550    | refund (permanent)                            |
| R4  | billing | svc-b   | T0+30h      | max_steps    | ok    | ok     | no        | 33     | refund, refund (transient, 2)                 |
| R5  | orders  | svc-a   | T0+47h59m   | completed    | ok    | ok     | yes       | 1200   | -                                             |
| O1  | orders  | svc-a   | T0+49h      | completed    | ok    | ok     | yes       | 5500   | search                                        |
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import duckdb
from analytics_fixture import T0, Call, Recorder, RunInfo, Step

from loopsight.stores.duckdb_store import Store

DAY = timedelta(days=1)


@dataclass
class World:
    """The fixture store and the runs in it."""

    store: Store
    runs: dict[str, RunInfo]

    def reader(self) -> duckdb.DuckDBPyConnection:
        return self.store.reader()


def record_world(recorder: Recorder) -> dict[str, RunInfo]:
    """Record the runs of the table above."""
    h = timedelta(hours=1)
    return {
        "P1": recorder.run(
            agent="orders", start=T0 + h, steps=[Step(50, 5, [Call("search", "p1", duration_ms=30)])], tail_ms=2
        ),
        "P2": recorder.run(
            agent="billing",
            service="svc-b",
            start=T0 + 2 * h,
            termination="timeout",
            error=True,
            steps=[Step(70, 7, [Call("refund", "p2", error_class="transient", error_type="timeout", duration_ms=40)])],
        ),
        "R1": recorder.run(
            agent="orders",
            start=T0 + 25 * h,
            steps=[
                Step(100, 10, [Call("search", "s1", duration_ms=20)]),
                Step(
                    200,
                    20,
                    [Call("lookup", "l1", error_class="transient", error_type="timeout", attempts=3, duration_ms=50)],
                ),
                Step(300, 30, [Call("search", "s2", duration_ms=40)], sub_agent="helper"),
                Step(400, 40),
            ],
        ),
        "R2": recorder.run(
            agent="orders",
            start=T0 + 26 * h,
            termination="loop_detected",
            steps=[
                Step(100, 10, [Call("search", "s9", duration_ms=60)]),
                Step(150, 15, [Call("search", "s9", duration_ms=80)]),
                Step(200, 20, [Call("search", "s9", duration_ms=100, loop_kind="exact")]),
            ],
        ),
        "R3": recorder.run(
            agent="billing",
            service="svc-b",
            start=T0 + 27 * h,
            error=True,
            steps=[Step(500, 50, [Call("refund", "r1", error_class="permanent", error_type="404", duration_ms=30)])],
        ),
        "R4": recorder.run(
            agent="billing",
            service="svc-b",
            start=T0 + 30 * h,
            termination="max_steps",
            tail_ms=300,
            steps=[
                Step(10, 1, [Call("refund", "r2", duration_ms=10)]),
                Step(
                    20, 2, [Call("refund", "r3", error_class="transient", error_type="429", attempts=2, duration_ms=70)]
                ),
            ],
        ),
        "R5": recorder.run(
            agent="orders", start=T0 + 47 * h + timedelta(minutes=59), steps=[Step(1000, 200)], tail_ms=7
        ),
        "O1": recorder.run(agent="orders", start=T0 + 49 * h, steps=[Step(5000, 500, [Call("search", "o1")])]),
    }


CURRENT = {"since": T0 + DAY, "until": T0 + 2 * DAY}
PREVIOUS = {"since": T0, "until": T0 + DAY}
