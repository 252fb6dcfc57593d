"""Pure statistics over per-pod timestamps, the way ClusterLoader2 and scheduler_perf count.

Percentiles are nearest-rank (`ceil(n*p/100)-1` on the sorted values), as CL2's
PodStartupLatency and scheduler_perf's throughput use, so our p99 of 100 samples is the
99th smallest value, not an interpolation. Times are seconds on one monotonic clock;
latencies are milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final

PERCENTILES: Final = (50, 90, 99)

# CL2 PodStartupLatency phases: name -> (from event, to event), as in ClusterLoader2's
# pod_startup_latency.go (podStartupTransitions). Events are client watch-receive times:
# "create" = the first event of the pod, "schedule" = the first with nodeName, "run" = the
# first with phase Running, "watch" = the same moment as "run" (CL2 sets both from one event,
# so run_to_watch is 0 by definition).
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
    contributes nothing to the phases that need it, as CL2's CalculateTransitionsLatency
    skips keys without both phases. No clamping: all times come from one receive clock.
    """
    out: dict[str, list[float]] = {name: [] for name in PHASES}
    for ev in events:
        for name, (a, b) in PHASES.items():
            start, end = ev.get(a), ev.get(b)
            if start is not None and end is not None:
                out[name].append((end - start) * 1000.0)
    return out


def sampled_rates(samples: Iterable[tuple[float, int]]) -> list[float]:
    """Per-interval scheduling rates (pods/s) from (tick time, pods scheduled so far) samples
    taken on a 1 s ticker, exactly as scheduler_perf's throughputCollector.run does
    (test/integration/scheduler_perf/util.go of k8s.io/kubernetes v1.36.3):

    - ticks while nothing is scheduled yet are ignored;
    - the first tick with pods scheduled only starts the clock (it would be an outlier:
      sampling and creating start independently);
    - a tick with no new pod records nothing but counts as skipped;
    - the next tick with new pods records new / (time since the last recorded tick), once
      per skipped interval plus once, so percentiles stay per-interval.
    """
    rates: list[float] = []
    started = False
    last_count = 0
    last_time = 0.0
    skipped = 0
    for t, scheduled in samples:
        if scheduled == 0:
            continue
        if not started:
            started, last_count, last_time = True, scheduled, t
            continue
        new = scheduled - last_count
        if new == 0:
            skipped += 1
            continue
        duration = t - last_time
        rate = new / duration if duration > 0 else 0.0
        rates.extend([rate] * (skipped + 1))
        last_count, last_time, skipped = scheduled, t, 0
    return rates


def throughput(samples: Iterable[tuple[float, int]]) -> dict[str, float]:
    """scheduler_perf's SchedulingThroughput (throughputCollector.collect): the average and
    nearest-rank Perc50/90/95/99 of `sampled_rates(samples)`; zeros when no interval was
    recorded (a run shorter than two ticks of scheduling)."""
    rates = sorted(sampled_rates(samples))
    if not rates:
        return {"Average": 0.0, "Perc50": 0.0, "Perc90": 0.0, "Perc95": 0.0, "Perc99": 0.0}
    return {
        "Average": sum(rates) / len(rates),
        "Perc50": percentile(rates, 50),
        "Perc90": percentile(rates, 90),
        "Perc95": percentile(rates, 95),
        "Perc99": percentile(rates, 99),
    }


# What the reports say they measured (printed in the console summary, result.json and HTML).
DEFINITIONS: Final[dict[str, str]] = {
    "pod_startup": (
        "ClusterLoader2 PodStartupLatency (pod_startup_latency.go): per pod, client "
        "watch-receive times; create = first event seen, schedule = first event with "
        "nodeName, run = watch = first event with phase Running; phases are differences of "
        "those; percentiles nearest-rank over pods that reached both ends"
    ),
    "throughput": (
        "scheduler_perf SchedulingThroughput (throughputCollector): the count of pods seen "
        "scheduled, sampled on a 1 s ticker; first non-zero sample skipped, intervals with "
        "no new pod not recorded but their time spread over the next rate; average and "
        "nearest-rank percentiles of the per-interval rates (pods/s)"
    ),
    "claim_allocation": (
        "per claim of the run: receive time of the first event with an allocation minus "
        "receive time of its first event"
    ),
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
