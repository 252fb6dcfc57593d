"""The index lent to a thread, one at a time, while the event loop waits for it to come back.

The index, and the caches of its evaluator and of the core, have one writer: the event loop
applies watch events to them and judges calls on them, one thing at a time. A call that waits
on the CEL sandbox is judged in a thread instead (`extender.judging`), so that the loop goes
on serving probes, signals and reading other calls meanwhile; for that long the index is
*lent* to the thread, which is then its one writer. Everything on the loop that reads or
writes the index waits until it is back (`back()`): watch events (`extender.cache.sync`),
other calls' judging and the warm-up (`extender.judging`), /debug/* reads. What the loop does
meanwhile touches none of it: probes, accepting connections and reading calls, the admission
gate, /metrics (whose cache gauge counts the index's maps, which judging never resizes).

The loan ends when the thread's work ends, whatever became of the coroutine that awaited it
(a cancelled handler does not hand the index back early).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class Loan:
    def __init__(self) -> None:
        self._home = asyncio.Event()
        self._home.set()
        self._thread: concurrent.futures.ThreadPoolExecutor | None = None

    @property
    def out(self) -> bool:
        """The index is lent to a thread now."""
        return not self._home.is_set()

    async def back(self) -> None:
        """Return once the index is not lent (at once when it is not). The caller must then
        use it before its next await: another loan may begin at any await."""
        while not self._home.is_set():
            await self._home.wait()

    def run(self, work: Callable[[], T]) -> asyncio.Future[T]:
        """`work()` in the loan's thread, the index lent to it until it returns. Call only
        when the index is home (`back()`, with no await since)."""
        assert not self.out, "the index is lent already"
        if self._thread is None:
            self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="judge")
        done = asyncio.get_running_loop().run_in_executor(self._thread, work)
        self._home.clear()
        # Cancelling an awaiter must not cancel `done` (it would resolve while the thread
        # still runs): awaiters wait through asyncio.shield. What a cancelled awaiter no
        # longer reads is read here (no "exception never retrieved").
        done.add_done_callback(self._returned)
        return done

    def _returned(self, done: asyncio.Future[Any]) -> None:
        self._home.set()
        if not done.cancelled():
            done.exception()
