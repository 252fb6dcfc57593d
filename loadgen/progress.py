"""Progress as lines of text, for logs where no progress bar is drawn (pure).

A run in CI or behind `tee` shows no bar; it prints one line per phase at least every
`interval` seconds instead: pods created, scheduled, running (of those expected), the rate
pods start at over the last interval and the time left at that rate.

    lines = progress.Lines(interval=30.0)
    text = lines.due(phase, created, scheduled, running, expected, now)   # None: not yet
"""

from __future__ import annotations

from dataclasses import dataclass, field

INTERVAL = 30.0
"""Seconds between two lines of one phase."""


@dataclass
class Lines:
    interval: float = INTERVAL
    last: dict[str, tuple[float, int]] = field(default_factory=dict)
    """Per phase: when its last line was due and how many of its pods were running then."""

    def due(
        self, phase: str, created: int, scheduled: int, running: int, expected: int, now: float
    ) -> str | None:
        """The phase's line when one is due at `now` (the first `interval` after the phase
        was first reported, then every `interval`), else None."""
        before = self.last.setdefault(phase, (now, running))
        if now - before[0] < self.interval or (expected and before[1] >= expected):
            return None  # not yet, or its last line already said all were running
        self.last[phase] = (now, running)
        rate = max(0, running - before[1]) / (now - before[0])
        return line(phase, created, scheduled, running, expected, rate)


def line(phase: str, created: int, scheduled: int, running: int, expected: int, rate: float) -> str:
    """`phase pods: created 5,000, scheduled 4,800, running 4,700 of 10,000; 10.6 pods/s,
    about 8m20s left`."""
    of = f" of {expected:,}" if expected else ""
    text = f"phase {phase}: created {created:,}, scheduled {scheduled:,}, running {running:,}{of}"
    text += f"; {rate:.1f} pods/s"
    left = expected - running
    if expected and left <= 0:
        return text + ", all running"
    if expected and rate > 0:
        text += f", about {clock_time(left / rate)} left"
    return text


def clock_time(seconds: float) -> str:
    """A time left: 45s, 8m20s, 2h05m."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
