"""Where a call is judged (`extender.judging`): inline on the event loop when it needs no CEL
sandbox worker, off the loop when it does, the index lent to that thread meanwhile (watch
events wait for it); what is not judged is counted once whichever way; a sandbox closed under
a thread's wait ends that wait at once."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator

import pytest

from extender import expressions, judging
from extender.cache.index import Index
from extender.config import Settings
from tests.unit.extender.helpers import GPU

_L = "[" + ",".join(str(i) for i in range(25)) + "]"
SLOW = f"device.driver != '' && {_L}.all(a, {_L}.all(b, {_L}.all(c, a + b + c >= 0)))"
"""3-deep over 25 elements: tens of ms in the sandbox, under its deadline."""


async def _lent(index: Index) -> None:
    """Wait (5 s at most) until the index is lent to the judging thread."""
    for _ in range(5000):
        if index.loan.out:
            return
        await asyncio.sleep(0.001)
    raise AssertionError("the index was never lent")


@pytest.fixture
async def index() -> AsyncIterator[Index]:
    index = Index(Settings())
    index.evaluator.sandbox.deadline = 5.0  # never abandoned on a loaded machine
    await index.evaluator.sandbox.warm()
    yield index
    index.evaluator.close()


async def test_a_call_needing_no_sandbox_is_judged_inline(index: Index) -> None:
    sel = index.evaluator.compile_selector("device.driver == 'gpu.nvidia.com'")

    def work() -> tuple[expressions.Outcome, str]:
        return index.evaluator.evaluate(sel, GPU), threading.current_thread().name

    out = await judging.judged(index, expressions.Budget(1.0), work)
    assert out == (expressions.Outcome.MATCH, threading.main_thread().name)


async def test_a_call_waiting_on_the_sandbox_leaves_the_loop_free_and_events_wait(
    index: Index,
) -> None:
    """The loop ticks while the worker evaluates; what waits for the index (as watch events
    do, `extender.cache.sync`) resumes only once the judging is done; the attempt inline
    stopped before its first sandboxed evaluation, so the work ran twice, the second time in
    the loan's thread, and only that one evaluated."""
    sel = index.evaluator.compile_selector(SLOW)
    assert sel.sandboxed
    runs: list[str] = []
    finished: list[float] = []

    def work() -> expressions.Outcome:
        runs.append(threading.current_thread().name)
        out = index.evaluator.evaluate(sel, GPU)
        finished.append(time.monotonic())
        return out

    ticks: list[float] = []

    async def tick() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.005)

    ticker = asyncio.create_task(tick())
    judged = asyncio.create_task(judging.judged(index, expressions.Budget(5.0), work))
    await _lent(index)  # the attempt inline gave way to the thread
    assert not judged.done()
    await index.loan.back()  # as a watch event waits
    back = time.monotonic()
    assert await judged is expressions.Outcome.MATCH
    ticker.cancel()
    assert runs[0] == threading.main_thread().name and runs[1].startswith("judge"), runs
    assert len(finished) == 1 and back >= finished[0]
    assert len([t for t in ticks if t < finished[0]]) >= 2  # the loop ran meanwhile
    # Cached now: the same evaluation is inline.
    assert await judging.judged(index, expressions.Budget(5.0), work) is expressions.Outcome.MATCH
    assert runs[2] == threading.main_thread().name


async def test_the_sandbox_closed_under_a_threads_wait_ends_it_at_once_not_judged(
    index: Index,
) -> None:
    index.evaluator.sandbox.deadline = 30.0
    costly = f"{_L}.all(a, {_L}.all(b, {_L}.all(c, {_L}.all(d, {_L}.all(e, a + b >= 0)))))"
    sel = index.evaluator.compile_selector(costly)
    judged = asyncio.create_task(
        judging.judged(index, expressions.Budget(30.0), lambda: index.evaluator.evaluate(sel, GPU))
    )
    await _lent(index)
    await asyncio.sleep(0.2)  # the worker evaluating
    closed = time.monotonic()
    index.evaluator.close()
    with pytest.raises(expressions.NotJudged, match="stopping"):
        await judged
    assert time.monotonic() - closed < 2.0
    assert not index.loan.out
