"""The extender bounding its own work: how many scheduler calls it admits at once, and how
late it may answer one.

The core judges a call synchronously on the event loop, so calls are judged one at a time
anyway; the `Gate` makes that a FIFO turn with bounds around it. A call is refused at once
(`Overloaded`: a 503, counted) when `max_inflight` calls (read, waiting or judged) are in
already, or when the calls ahead of it would take longer to judge than its deadline (their
number times the recent time to judge one): a burst cannot queue up unbounded memory and
work, and a call is not admitted only to wait for a turn it cannot get in time. A call whose
turn still comes after its deadline is not judged (the handler answers "every node passes,
every score 0", counted): the scheduler gets an answer it can use within its timeout rather
than a late one it drops, and the backlog drains at the cost of an answer, not of a
computation.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable


class Overloaded(Exception):
    """More calls in flight than the gate admits."""


class Gate:
    SMOOTHING = 0.2
    """Weight of the latest judged call in `judge_seconds` (an exponential moving average)."""

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
        self.judge_seconds = 0.0
        """Recent time to judge one call (moving average); 0 until a call was judged."""
        self._turn = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def admitted(self) -> AsyncIterator[Turn]:
        """The call's place, from its arrival (before its body is read) to its answer;
        raises Overloaded when `max_inflight` calls are in already, or when those would take
        longer than the deadline to judge."""
        if self.inflight >= self.max_inflight:
            raise Overloaded(f"{self.inflight} calls in flight, the most admitted")
        wait = (self.inflight + 1) * self.judge_seconds  # the calls ahead, then this one
        if wait > self.deadline_seconds:
            raise Overloaded(
                f"{self.inflight} calls ahead: judged in about {wait:.2f}s, past the "
                f"{self.deadline_seconds:g}s call deadline"
            )
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
        gate = self._gate
        async with gate._turn:
            start = gate.clock()
            in_time = start <= self.deadline
            yield in_time
            if in_time:
                took = gate.clock() - start
                gate.judge_seconds += gate.SMOOTHING * (took - gate.judge_seconds)
