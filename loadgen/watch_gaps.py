"""Watch gaps: when one of a run's watches was broken, kept in its `loadgen.records` so
reports can mark the latencies measured across an outage."""

from __future__ import annotations

from typing import Final

from loadgen.records import Records, WatchGap

# Watch restart reasons, mildest first: a gap keeps its worst.
_SEVERITY: Final = {"closed": 0, "error": 1, "gone": 2}


def watch_broke(rec: Records, plural: str, reason: str, now: float) -> None:
    """The watch of `plural` restarted for `reason` (closed, error, gone)."""
    rec.watch_restarts += 1
    gap = rec.broken.get(plural)
    if gap is None:
        rec.broken[plural] = WatchGap(plural, reason, now)
    elif _SEVERITY.get(reason, 1) > _SEVERITY.get(gap.reason, 1):
        gap.reason = reason


def watch_resumed(rec: Records, plural: str, now: float | None) -> None:
    """The first delivery after a break (None: the run ended with the watch still broken)."""
    gap = rec.broken.pop(plural, None)
    if gap is None:
        return
    gap.end = now
    # A stream the server ended on its timeout and that resumed at once is routine: only
    # failures (no answer, 5xx, 410) make a gap worth reporting.
    if gap.reason != "closed":
        rec.watch_gaps.append(gap)
