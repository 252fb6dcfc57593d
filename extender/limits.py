"""The extender bounding its own work: how many scheduler calls it admits at once, and how
late it may answer one.

The core judges a call synchronously on the event loop, so calls are judged one at a time
anyway; the `Gate` makes that a FIFO turn with two bounds around it. A call beyond
`max_inflight` (read, waiting or judged) is refused at once (`Overloaded`: a 503, counted),
so a burst cannot queue up unbounded memory and work. A call whose turn comes after its
deadline is not judged (the handler answers "every node passes, every score 0", counted):
the scheduler gets an answer it can use within its timeout rather than a late one it drops,
and the backlog drains at the cost of an answer, not of a computation.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable


class Overloaded(Exception):
    """More calls in flight than the gate admits."""


class Gate:
    def __init__(
        self,
        *,
        max_inflight: int,
        deadline_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_inflight = max_inflight
        self.deadline_seconds = deadline_seconds
        self.clock = clock
        self.inflight = 0
        self._turn = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def admitted(self) -> AsyncIterator[Turn]:
        """The call's place, from its arrival (before its body is read) to its answer;
        raises Overloaded when `max_inflight` calls are in already."""
        if self.inflight >= self.max_inflight:
            raise Overloaded(f"{self.inflight} calls in flight, the most admitted")
        self.inflight += 1
        try:
            yield Turn(self, self.clock() + self.deadline_seconds)
        finally:
            self.inflight -= 1


class Turn:
    def __init__(self, gate: Gate, deadline: float) -> None:
        self._gate = gate
        self.deadline = deadline

    @contextlib.asynccontextmanager
    async def judging(self) -> AsyncIterator[bool]:
        """Wait for this call's turn to be judged; yields False if the deadline has passed
        by then (answer "not judged"), True otherwise."""
        async with self._gate._turn:
            yield self._gate.clock() <= self.deadline
