"""Pure statistics over per-pod timestamps, the way ClusterLoader2 and scheduler_perf count.

Percentiles are nearest-rank (`ceil(n*p/100)-1` on the sorted values), as CL2's
PodStartupLatency uses, so our p99 of 100 samples is the 99th smallest value, not an
interpolation. Times are seconds on one monotonic clock; results are milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final

PERCENTILES: Final = (50, 90, 99)

# CL2 PodStartupLatency phases: name -> (from event, to event). Events are client receive
# times: "create" = first evidence the pod exists (watch event, POST answer), "schedule" =
# first seen with nodeName, "run" = first seen Running, "watch" = when the tracker observed
# Running (the same moment: with watch-receive times run_to_watch is 0 by definition).
PHASES: Final[dict[str, tuple[str, str]]] = {
    "create_to_schedule": ("create", "schedule"),
    "schedule_to_run": ("schedule", "run"),
    "run_to_watch": ("run", "watch"),
    "schedule_to_watch": ("schedule", "watch"),
    "pod_startup": ("create", "watch"),
    "create_to_run": ("create", "run"),
}


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of already sorted values; 0 for no values."""
    if not sorted_values:
        return 0.0
    rank = math.ceil(len(sorted_values) * p / 100) - 1
    return sorted_values[min(max(rank, 0), len(sorted_values) - 1)]


def summarize(values: Iterable[float]) -> dict[str, float]:
    """count, min, max, avg and Perc50/90/99 (nearest rank) of a sample."""
    ordered = sorted(values)
    n = len(ordered)
    out: dict[str, float] = {
        "count": float(n),
        "min": ordered[0] if n else 0.0,
        "max": ordered[-1] if n else 0.0,
        "avg": sum(ordered) / n if n else 0.0,
    }
    for p in PERCENTILES:
        out[f"Perc{p}"] = percentile(ordered, p)
    return out


def phase_durations_ms(
    events: Iterable[dict[str, float | None]],
) -> dict[str, list[float]]:
    """Per CL2 phase, the durations in ms of every pod that reached both ends of it.

    A pod that never reached an event (still pending when a run was cut short) simply
    contributes nothing to the phases that need it.
    """
    out: dict[str, list[float]] = {name: [] for name in PHASES}
    for ev in events:
        for name, (a, b) in PHASES.items():
            start, end = ev.get(a), ev.get(b)
            if start is not None and end is not None:
                out[name].append(max(0.0, end - start) * 1000.0)
    return out


def per_second_counts(times: Iterable[float], origin: float) -> list[int]:
    """How many events fell into each whole second after `origin`, up to the last event."""
    buckets: list[int] = []
    for t in times:
        i = int(max(0.0, t - origin))
        if i >= len(buckets):
            buckets.extend([0] * (i + 1 - len(buckets)))
        buckets[i] += 1
    return buckets


def throughput(times: Sequence[float]) -> dict[str, float]:
    """scheduler_perf's SchedulingThroughput: stats of per-second rates (pods/s).

    The window runs from the first to the last event, so idle time before the first pod was
    scheduled does not drag the average down.
    """
    if not times:
        return {"Average": 0.0, "Perc50": 0.0, "Perc90": 0.0, "Perc95": 0.0, "Perc99": 0.0}
    rates = [float(c) for c in per_second_counts(times, min(times))]
    ordered = sorted(rates)
    return {
        "Average": sum(rates) / len(rates),
        "Perc50": percentile(ordered, 50),
        "Perc90": percentile(ordered, 90),
        "Perc95": percentile(ordered, 95),
        "Perc99": percentile(ordered, 99),
    }


def cdf(values: Iterable[float], points: int = 200) -> list[tuple[float, float]]:
    """(value, fraction <= value) pairs, thinned to about `points` for plotting."""
    ordered = sorted(values)
    n = len(ordered)
    if not n:
        return []
    step = max(1, n // points)
    idx = list(range(step - 1, n, step))
    if idx[-1] != n - 1:
        idx.append(n - 1)
    return [(ordered[i], (i + 1) / n) for i in idx]


def server_bound_violations(
    pods: Iterable[tuple[float, float, float, float]], slack: float = 1.0
) -> int:
    """Pods whose client create->Running is shorter than the API server's timestamps allow.

    Each tuple is (client create, client running, server created, server running) in
    seconds; server timestamps have one-second resolution, so `slack` absorbs truncation.
    """
    return sum(
        1
        for c_create, c_run, s_create, s_run in pods
        if (c_run - c_create) < (s_run - s_create) - slack
    )
