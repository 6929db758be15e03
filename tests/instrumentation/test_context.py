"""Context propagation into threads and executors."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import loopsight


def test_wrap_context_thread_nests_under_tool(loopsight_spans):
    @loopsight.tool
    def leaf(i):
        return i

    with loopsight.agent("a"), loopsight.tool("fanout") as parent:
        threads = [threading.Thread(target=loopsight.wrap_context(leaf), args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    leaves = loopsight_spans.by_name("execute_tool leaf")
    assert len(leaves) == 3
    assert {s.parent.span_id for s in leaves} == {parent.span.get_span_context().span_id}


def test_executor_helper_vs_plain_executor(loopsight_spans):
    @loopsight.tool
    def leaf(i):
        return loopsight.current_step()

    @loopsight.llm(model="m")
    def model():
        return None

    with loopsight.agent("a") as run:
        model()
        model()
        with loopsight.ContextThreadPoolExecutor(max_workers=2) as pool:
            steps = list(pool.map(leaf, range(4)))
        with ThreadPoolExecutor(max_workers=2) as plain:
            orphan_steps = list(plain.map(leaf, range(2)))
    assert steps == [1, 1, 1, 1]
    assert orphan_steps == [None, None]
    agent_id = run.span.get_span_context().span_id
    leaves = loopsight_spans.by_name("execute_tool leaf")
    nested = [s for s in leaves if s.parent is not None and s.parent.span_id == agent_id]
    assert len(nested) == 4
    assert all(s.attributes["loopsight.step"] == 1 for s in nested)


def test_wrapped_function_reusable_concurrently(loopsight_spans):
    with loopsight.agent("a"):
        fn = loopsight.wrap_context(lambda: loopsight.current_run().name)
    with ThreadPoolExecutor(max_workers=4) as pool:
        names = [f.result() for f in [pool.submit(fn) for _ in range(8)]]
    assert names == ["a"] * 8
