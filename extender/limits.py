"""The extender bounding its own work: how many scheduler calls it admits at once, and how
late it may answer one.

The core judges one call at a time (inline on the event loop, or in a thread when it waits on
the CEL sandbox: `extender.judging`); the `Gate` makes that a FIFO turn with bounds around it.
A call is admitted once its body is read (a client trickling its body holds no place: the
handler reads it against the call's deadline first). It is refused at once (`Overloaded`: a
503, counted) when `max_inflight` calls (waiting or judged) are in already, or when the calls
ahead of it would take longer to judge than its deadline (their number times the recent time
to judge one): a burst cannot queue up unbounded memory and work, and a call is not admitted
only to wait for a turn it cannot get in time. A call whose deadline passes before its turn
comes is not judged (the handler answers "every node passes, every score 0" at once, counted,
logged once per burst): the scheduler gets an answer it can use within its timeout rather than
a late one it drops, and the backlog drains at the cost of an answer, not of a computation.
The deadline counts from the call's arrival in the kernel (`extender.arrival`), not from its
handler's start, which a busy event loop delays.

The gate cannot latch shut: the recent time to judge one call decays with time (one costly
call, a long GC pause or a stopped process raise it only for a while), and a call is always
admitted when none is in flight. While it refuses calls, `refusing()` says so (/readyz).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable


class Overloaded(Exception):
    """More calls in flight than the gate admits."""


class Gate:
    SMOOTHING = 0.2
    """Weight of the latest judged call in `judge_seconds` (an exponential moving average)."""
    HALF_LIFE_SECONDS = 2.0
    """The estimate halves every this many seconds without a judged call to renew it."""
    LONG_TURN_SECONDS = 0.05
    BREATHER_SECONDS = 0.02
    """After a turn that held the event loop longer than LONG_TURN_SECONDS (a call that spent
    its CEL budget...), the next turn waits BREATHER_SECONDS: two long calls back to back
    held /healthz past its 1 s."""

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
        self._judge_seconds = 0.0
        self._judged_at = clock()
        self._refused_at: float | None = None
        self._refused_why = ""
        self._turn = _Turn()
        self.late = Burst(deadline_seconds, clock)
        """Calls answered not judged past their deadline: said (logged) once per burst."""

    @property
    def judge_seconds(self) -> float:
        """Recent time to judge one call (a moving average of judged calls, decaying with
        the time since the last one); 0 until a call was judged."""
        age = max(0.0, self.clock() - self._judged_at)
        return float(self._judge_seconds * 0.5 ** (age / self.HALF_LIFE_SECONDS))

    @judge_seconds.setter
    def judge_seconds(self, seconds: float) -> None:
        self._judge_seconds = seconds
        self._judged_at = self.clock()

    def refusing(self) -> str | None:
        """Why the gate is refusing calls, if it refused one within the last deadline
        (`/readyz` says so), else None."""
        if self._refused_at is None or self.clock() - self._refused_at > self.deadline_seconds:
            return None
        return f"refusing scheduler calls: {self._refused_why}"

    def admitted(self, arrived: float | None = None) -> _Admitted:
        """The call's place, from its admission (its body read) to its answer (an async
        context yielding its `Turn`); raises Overloaded when `max_inflight` calls are in
        already, or when those would take longer than the deadline to judge. The deadline
        counts from `arrived` (the gate's clock; now if not given). A class, not an
        asynccontextmanager: every call passes here, and the generator cost more than the
        check."""
        return _Admitted(self, arrived)


class _Admitted:
    __slots__ = ("_arrived", "_gate")

    def __init__(self, gate: Gate, arrived: float | None) -> None:
        self._gate = gate
        self._arrived = arrived

    async def __aenter__(self) -> Turn:
        gate = self._gate
        wait = (gate.inflight + 1) * gate.judge_seconds  # the calls ahead, then this one
        why = None
        if gate.inflight >= gate.max_inflight:
            why = f"{gate.inflight} calls in flight, the most admitted"
        elif gate.inflight and wait > gate.deadline_seconds:
            why = (
                f"{gate.inflight} calls ahead: judged in about {wait:.2f}s, past the "
                f"{gate.deadline_seconds:g}s call deadline"
            )
        if why is not None:
            gate._refused_at, gate._refused_why = gate.clock(), why
            raise Overloaded(why)
        gate.inflight += 1
        start = gate.clock() if self._arrived is None else self._arrived
        return Turn(gate, start + gate.deadline_seconds)

    async def __aexit__(self, *exc: object) -> None:
        self._gate.inflight -= 1


class Turn:
    __slots__ = ("_gate", "_held", "_in_time", "_recent", "_start", "deadline")

    def __init__(self, gate: Gate, deadline: float) -> None:
        self._gate = gate
        self.deadline = deadline
        self._held = False

    def judging(self) -> Turn:
        """Wait for this call's turn to be judged, until its deadline at most (an async
        context); yields False if the deadline has passed first (answer "not judged" at
        once, without the turn), True otherwise. A turn judged off the event loop
        (`extender.judging`) leaves the loop free, so a call behind it is answered at its
        deadline, not when the turn ends. Once per turn."""
        return self

    async def __aenter__(self) -> bool:
        gate = self._gate
        turn = gate._turn
        if not turn._held and not turn._waiting:
            turn._held = True  # free, as for nearly every call: `take` without its coroutine
        elif not await turn.take(self.deadline - gate.clock()):
            return False
        self._held = True
        try:
            self._start = start = gate.clock()
            self._recent = gate.judge_seconds  # the estimate as this call's judging began
            self._in_time = in_time = start <= self.deadline
        except BaseException:
            self._held = False
            turn.give()
            raise
        return in_time

    async def __aexit__(self, exc_type: object, *exc: object) -> None:
        if not self._held:
            return
        self._held = False
        gate = self._gate
        try:
            if exc_type is not None:
                return
            took = gate.clock() - self._start
            if self._in_time:
                recent = self._recent
                gate.judge_seconds = recent + gate.SMOOTHING * (took - recent)
            if took > gate.LONG_TURN_SECONDS:
                # The loop was held: let it serve others (a probe takes a few of its rounds
                # to be read and answered) before the next call's turn holds it again.
                await asyncio.sleep(gate.BREATHER_SECONDS)
        finally:
            gate._turn.give()


class _Turn:
    """One holder at a time, the others served first come first served, each waiting only so
    long. (asyncio.Lock under asyncio.timeout did the same at ~10 µs a call more: a timer
    armed and cancelled even when the turn is free, as it is for nearly every call.)"""

    def __init__(self) -> None:
        self._held = False
        self._waiting: deque[asyncio.Future[bool]] = deque()

    async def take(self, within: float) -> bool:
        """Take the turn, waiting `within` seconds at most: whether it was taken."""
        if not self._held and not self._waiting:
            self._held = True
            return True
        if within <= 0:
            return False
        loop = asyncio.get_running_loop()
        handed = loop.create_future()
        self._waiting.append(handed)
        timer = loop.call_later(within, _expire, handed)
        try:
            taken: bool = await handed
        except asyncio.CancelledError:
            if handed.done() and not handed.cancelled() and handed.result():
                self.give()  # handed over as the waiter was cancelled: pass it on
            raise
        finally:
            timer.cancel()
            if not (handed.done() and not handed.cancelled() and handed.result()):
                with contextlib.suppress(ValueError):  # `give` may have passed over it
                    self._waiting.remove(handed)
        return taken

    def give(self) -> None:
        """Hand the turn to the first still waiting, else free it."""
        while self._waiting:
            handed = self._waiting.popleft()
            if not handed.done():
                handed.set_result(True)
                return
        self._held = False


def _expire(handed: asyncio.Future[bool]) -> None:
    if not handed.done():
        handed.set_result(False)


class Burst:
    """Says a thing once per burst of it: `say()` is the number of times it went unsaid
    since last said (0 the first time) when it is to be said now, else None. A burst ends
    `quiet` seconds after the last time."""

    def __init__(self, quiet: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.quiet = quiet
        self.clock = clock
        self._last: float | None = None
        self._unsaid = 0

    def say(self) -> int | None:
        now = self.clock()
        last, self._last = self._last, now
        if last is not None and now - last <= self.quiet:
            self._unsaid += 1
            return None
        unsaid, self._unsaid = self._unsaid, 0
        return unsaid


class Rate:
    """At most `per_second` events a second on average, `burst` at once (a token bucket that
    never waits: `allow()` says yes or no at once)."""

    def __init__(
        self, per_second: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_second = per_second
        self.burst = burst
        self.clock = clock
        self._tokens = float(burst)
        self._at = clock()

    def allow(self) -> bool:
        now = self.clock()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.per_second)
        self._at = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True
