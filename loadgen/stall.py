"""When a phase's wait should give up: on a stall, not on a fixed clock (pure).

A phase waits for its pods (Running, settled, finished). A busy scheduler may take many
minutes to place 10,000 pods while it never stops making progress; a fixed wall-clock limit
would kill that healthy run. So a wait fails when nothing has moved for `stall` seconds:
no pod seen, scheduled, given a new verdict by the scheduler, Running or finished. An
explicit `cap` (`--timeout`) still bounds the whole wait.

    watch = stall.Watch(stall=120, cap=None, started=clock())
    watch.observe(mark, clock())       # after every event: progress moves the deadline
    watch.expired(clock())             # "stalled", "capped" or None
    watch.remaining(clock())           # seconds until it could expire (None: never)
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Literal

Expiry = Literal["stalled", "capped"]


@dataclass
class Watch:
    """Tracks one wait: when it started, when progress was last seen, what progress was."""

    stall: float
    """Seconds without progress after which the wait has stalled."""
    cap: float | None
    """Seconds after which the wait ends however it goes (None: no cap)."""
    started: float
    """When the wait started (the clock's seconds): the first progress is counted from it."""
    mark: Hashable = None
    """The last progress marker seen: any change to it is progress."""

    def __post_init__(self) -> None:
        self.moved = self.started

    def observe(self, mark: Hashable, now: float) -> None:
        """`mark` as of `now`; a marker unlike the last one is progress."""
        if mark != self.mark:
            self.mark = mark
            self.moved = max(self.moved, now)

    def expired(self, now: float) -> Expiry | None:
        if self.cap is not None and now - self.started >= self.cap:
            return "capped"
        if now - self.moved >= self.stall:
            return "stalled"
        return None

    def remaining(self, now: float) -> float:
        """Seconds until the wait could expire if nothing moves (0 once it has)."""
        left = self.moved + self.stall - now
        if self.cap is not None:
            left = min(left, self.started + self.cap - now)
        return max(0.0, left)

    def idle(self, now: float) -> float:
        """Seconds since progress was last seen."""
        return max(0.0, now - self.moved)
