"""Counters read over their processes' lives: what a component's series moved by during a run
in which the component may have restarted (pure: scrapes in, figures and facts out).

A counter starts again from 0 with its process. As Prometheus's `increase()` reads it, a drop
is a reset and the value after it is all new growth; a change of `process_start_time_seconds`
is a reset too, even where a counter grew past its old value before it was next seen. A run's
figure is the sum over its process segments. A counter's growth from an old process's last
scrape to its end is never seen: the figure is whole when the scrape after that last answer
came within one sampling interval (`max_gap`), and "partial" (no number) otherwise, or when
the run's first scrape went unanswered by a process that was already counting.

    c = segments.Component("scheduler", origin_wall=started_wall, max_gap=5.0)
    c.answered(0.0, before); c.failed(2.0, "connection refused"); c.answered(4.0, after)
    c.restarts, c.partial, c.deltas()

A scrape is folded as it comes, so a long run keeps one value per series, not every scrape.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from loadgen import series

START_TIME = "process_start_time_seconds"
PREFIXES = (*series.INTERESTING, *series.GAUGES, START_TIME)
"""The series `Component.deltas` reads (for `series.parse(text, prefixes=PREFIXES)`)."""


def is_counter(key: str) -> bool:
    """A counter or a histogram's (summary's) sum or count, by Prometheus's naming."""
    return key.split("{", 1)[0].endswith(("_total", "_sum", "_count"))


def grown(previous: float | None, value: float, *, reset: bool = False) -> float:
    """What a counter grew by from `previous` to `value`: after a reset (a new process, or a
    drop, or no earlier value), all of `value`."""
    if previous is None or reset or value < previous:
        return value
    return value - previous


def running(column: Sequence[float | None], resets: Collection[int] = ()) -> list[float | None]:
    """A counter's growth since the first sample, at each sample (None where not sampled), as
    `increase()` reads it without extrapolation; `resets`: indices at which a new process was
    first seen. Absent at the first sample counts as 0: a labelled counter appears once it
    first counts. Its differences are rates that never go negative at a restart."""
    out: list[float | None] = []
    total = 0.0
    previous = column[0] if column else None
    for i, value in enumerate(column):
        if i > 0 and value is not None:
            total += grown(previous, value, reset=i in resets)
            previous = value
        out.append(None if value is None else total)
    return out


def increase(column: Sequence[float | None], resets: Collection[int] = ()) -> float:
    """A counter's growth over the whole column (see `running`)."""
    return next((v for v in reversed(running(column, resets)) if v is not None), 0.0)


@dataclass(frozen=True)
class Restart:
    """A new process of a component, met by a scrape."""

    component: str
    seen: float
    """Run seconds of the first scrape that met the new process."""
    started: float | None
    """Run seconds the new process started (its start-time series); None: it has none, and
    the restart was seen as a counter's drop."""
    unseen_seconds: float
    """From the old process's last answered scrape to the next scrape: its counts in that
    stretch are not in the figures."""
    last_answer: float = 0.0
    """Run seconds of the old process's last answered scrape: the unseen stretch's start."""


@dataclass
class Component:
    """One component's scrapes through a run, folded as they come."""

    name: str
    origin_wall: float
    """Epoch seconds of the run's start: scrapes' times are seconds since it."""
    max_gap: float
    """Longest stretch after an old process's last answer whose counts may go unseen for the
    figures to stay whole (about one sampling interval)."""
    attempts: int = 0
    failures: int = 0
    first_error: str | None = None
    """The first failed scrape's reason (said once, not per scrape)."""
    first_failure: float | None = None
    start_time_series: bool | None = None
    """Whether its /metrics has `process_start_time_seconds` (None: never answered)."""
    restarts: list[Restart] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)
    """Why its counter figures cannot be made whole (empty: they are)."""
    _first: series.Samples | None = None
    _last: series.Samples | None = None
    _last_at: float = 0.0
    _after_last: float | None = None
    """When the first scrape after the last answer was tried (and failed)."""
    _start: float | None = None
    _base: series.Samples = field(default_factory=dict)
    """The current segment's counters at its beginning (a new process's: none, all 0)."""
    _done: dict[str, float] = field(default_factory=dict)
    """Per counter, its growth over the segments already closed."""

    @property
    def processes(self) -> int:
        return len(self.restarts) + 1 if self._last is not None else 0

    def failed(self, at: float, reason: str) -> None:
        self.attempts += 1
        self.failures += 1
        if self.first_error is None:
            self.first_error, self.first_failure = reason, at
        if self._last is not None and self._after_last is None:
            self._after_last = at

    def answered(self, at: float, samples: series.Samples) -> None:
        self.attempts += 1
        start = samples.get(START_TIME)
        self.start_time_series = start is not None
        if self._last is None:
            self._begin(at, samples, start)
        elif self._restarted(samples, start):
            self._close(at, start)
        self._last, self._last_at, self._after_last = samples, at, None
        if start is not None:
            self._start = start

    def _begin(self, at: float, samples: series.Samples, start: float | None) -> None:
        self._first = samples
        if self.attempts == 1:
            self._base = {k: v for k, v in samples.items() if is_counter(k)}
        elif start is not None and start >= self.origin_wall:
            self._base = {}  # started within the run: everything it counted is the run's
        else:
            self.partial.append(
                f"its first answer came {at:.0f} s into the run, from a process already "
                "counting: what it counted before is not known"
            )

    def _restarted(self, samples: series.Samples, start: float | None) -> bool:
        if start is not None and self._start is not None:
            return start != self._start
        last = self._last or {}
        return any(v < last[k] for k, v in samples.items() if k in last and is_counter(k))

    def _close(self, at: float, start: float | None) -> None:
        """The old process's segment added to the figures; the new one counts from 0."""
        last = self._last or {}
        for key, value in last.items():
            if is_counter(key):
                self._done[key] = self._done.get(key, 0.0) + value - self._base.get(key, 0.0)
        self._base = {}
        next_try = self._after_last if self._after_last is not None else at
        if start is not None:
            next_try = min(next_try, max(self._last_at, start - self.origin_wall))
        unseen = max(0.0, next_try - self._last_at)
        self.restarts.append(
            Restart(
                component=self.name,
                seen=round(at, 3),
                started=None if start is None else round(start - self.origin_wall, 3),
                unseen_seconds=round(unseen, 3),
                last_answer=round(self._last_at, 3),
            )
        )
        if unseen > self.max_gap:
            self.partial.append(
                f"it restarted with no scrape in the {unseen:.0f} s before: what the old "
                "process counted then is not known"
            )

    def growth(self, key: str) -> float | None:
        """A counter's growth over the run, summed over its processes (None: partial, or
        never scraped)."""
        if self.partial or self._last is None:
            return None
        last = self._last.get(key)
        tail = 0.0 if last is None else last - self._base.get(key, 0.0)
        return self._done.get(key, 0.0) + tail

    def deltas(self, *, limit: int = series.SERIES_LIMIT) -> dict[str, float]:
        """`series.deltas`'s figures over every process: counters summed over their
        segments (none when partial), a gauge's value after, and its change only where one
        process lived through the run (a change across processes measures neither)."""
        if self._last is None or self._first is None:
            return {}
        out: dict[str, float] = {}
        keys = [*self._last, *(k for k in self._done if k not in self._last)]
        for key in keys:
            if len(out) >= limit:
                break
            if not series.kept(key):
                continue
            after = self._last.get(key)
            if key.startswith(series.GAUGES):
                if after is not None:
                    out[key] = after
                if after is not None and not self.restarts and key in self._first:
                    out[series.CHANGE + key] = round(after - self._first[key], 6)
            elif not is_counter(key):
                if after is not None and not self.restarts:
                    change = after - self._first.get(key, 0.0)
                    if change:
                        out[key] = round(change, 6)
            elif (growth := self.growth(key)) is not None and growth:
                out[key] = round(growth, 6)
        return out

    @property
    def spans_processes(self) -> list[str]:
        """The gauge figures the run's processes share (a value after is the last one's)."""
        return [series.CHANGE + g for g in series.GAUGES] if self.restarts else []


def between(before: series.Samples, after: series.Samples) -> dict[str, float]:
    """`Component.deltas` of two scrapes taken in turn (a restart between them shows by its
    start time or a counter's drop)."""
    c = Component("", origin_wall=0.0, max_gap=float("inf"))
    c.answered(0.0, before)
    c.answered(1.0, after)
    return c.deltas()
