"""Where a call is judged: inline on the event loop, or in a thread when it waits on the CEL
sandbox.

Most calls evaluate no expression that needs the sandbox, or find its results cached: they
are judged inline, as fast as before. A call is first judged inline with the evaluator told
never to wait (`Evaluator.inline_only`); at its first evaluation that needs a sandbox worker
that attempt stops (`NeedsSandbox`) and the call is judged again, from the start, in the
index's loan thread (`extender.cache.loan`). Meanwhile the loop serves /healthz, signals and
the reading of other calls; the index is lent to that thread, so nothing on the loop touches
it until the thread is done: no watch event is applied half-way through a verdict, and no
two judges write the caches at once (the gate admits one call's judging at a time anyway).

The attempt inline keeps what it found (results cached, budget spent): the second judging
goes on from there, within the same CEL budget. `work` must therefore say nothing it would
say twice (the handlers count what was not judged once `judged` returns).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from extender import expressions
from extender.cache.index import Index

T = TypeVar("T")


async def judged(index: Index, budget: expressions.Budget, work: Callable[[], T]) -> T:
    """`work()` within `budget`'s CEL time, inline if it needs no sandbox worker, else off
    the loop (see the module). Raises what `work` raises (`expressions.NotJudged`...)."""
    evaluator = index.evaluator
    if index.loan.out:
        await index.loan.back()
    # `evaluator.spending(budget)` and `inline_only`, without a context's generator: the
    # common path, every call.
    outer = evaluator.spend(budget)
    evaluator.inline_only = True
    try:
        return work()
    except expressions.NeedsSandbox:
        pass
    finally:
        evaluator.inline_only = False
        evaluator.spend(outer)

    def off_loop() -> T:
        with evaluator.spending(budget):
            return work()

    return await asyncio.shield(index.loan.run(off_loop))
