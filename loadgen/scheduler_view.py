"""kube-scheduler's own view of a run, from its /metrics sampled through the run: pending
pods by queue, incoming pods by event and queue, event handling, queueing hints, algorithm
against attempt time, extension points, client-side throttling, and the extender's serving
time beside it. Pure: scrapes (`series.Samples`) in, a compact timeline and its totals out;
`loadgen.scrape.Sampler` takes the scrapes.

Each scrape is reduced to a few dozen short keys (`reduce`), so a long run keeps a small
timeline: `pending:gated`, `incoming:<event>:<queue>`, `event_seconds:<event>`,
`hint_seconds`, `algorithm_seconds`/`algorithm_count`, `attempt_seconds`/`attempts`,
`point_seconds:<extension point>`, `throttle_seconds`, `cpu_seconds`, `scheduled`, and from
the extender's scrape `extender_seconds:<verb>`/`extender_calls:<verb>`. Counters stay
cumulative (their differences are the rates); `pending:*` are gauges. `process_start` is
kube-scheduler's start time: where it changes, a new process counts from 0, and a counter's
change is taken over its processes (`loadgen.segments`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from loadgen import segments, series

QUEUES = ("active", "backoff", "unschedulable", "gated")
PENDING = "pending:"
INCOMING = "incoming:"
EVENT_SECONDS = "event_seconds:"
POINT_SECONDS = "point_seconds:"
EXTENDER_SECONDS = "extender_seconds:"
EXTENDER_CALLS = "extender_calls:"
PROCESS_START = "process_start"
# The extension points run inside the scheduling algorithm (findNodesThatFitPod and
# prioritizeNodes): the algorithm's time outside them is the extenders' calls and the
# node selection around them.
ALGORITHM_POINTS = ("PreFilter", "Filter", "PreScore", "Score")

_LABELS = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _labels(key: str) -> dict[str, str]:
    return dict(_LABELS.findall(key[key.find("{") :])) if "{" in key else {}


# Series name -> how its samples become reduced keys: a fixed key, or a key from labels.
def _key(name: str, labels: Mapping[str, str]) -> str | None:
    match name:
        case "scheduler_pending_pods":
            return PENDING + labels.get("queue", "")
        case "scheduler_queue_incoming_pods_total":
            return f"{INCOMING}{labels.get('event', '')}:{labels.get('queue', '')}"
        case "scheduler_event_handling_duration_seconds_sum":
            return EVENT_SECONDS + labels.get("event", "")
        case "scheduler_queueing_hint_execution_duration_seconds_sum":
            return "hint_seconds"
        case "scheduler_queueing_hint_execution_duration_seconds_count":
            return "hint_count"
        case "scheduler_scheduling_algorithm_duration_seconds_sum":
            return "algorithm_seconds"
        case "scheduler_scheduling_algorithm_duration_seconds_count":
            return "algorithm_count"
        case "scheduler_scheduling_attempt_duration_seconds_sum":
            return "attempt_seconds"
        case "scheduler_scheduling_attempt_duration_seconds_count":
            return "attempts"
        case "scheduler_framework_extension_point_duration_seconds_sum":
            return POINT_SECONDS + labels.get("extension_point", "")
        case "scheduler_schedule_attempts_total":
            return labels.get("result") or None  # scheduled, unschedulable, error
        case "rest_client_rate_limiter_duration_seconds_sum":
            return "throttle_seconds"
        case "process_cpu_seconds_total":
            return "cpu_seconds"
        case "extender_request_duration_seconds_sum":
            return EXTENDER_SECONDS + labels.get("verb", "")
        case "extender_request_duration_seconds_count":
            return EXTENDER_CALLS + labels.get("verb", "")
    return None


def reduce_scrapes(scheduler: series.Samples, extender: series.Samples | None) -> dict[str, float]:
    """One sample of the timeline: kube-scheduler's scrape and the extender's, reduced, with
    kube-scheduler's start time (read from its scrape alone)."""
    reduced = reduce(merged(scheduler, extender))
    if (start := scheduler.get(segments.START_TIME)) is not None:
        reduced[PROCESS_START] = start
    return reduced


PREFIXES = (
    "scheduler_pending_pods",
    "scheduler_queue_incoming_pods_total",
    "scheduler_event_handling_duration_seconds_",
    "scheduler_queueing_hint_execution_duration_seconds_",
    "scheduler_scheduling_algorithm_duration_seconds_",
    "scheduler_scheduling_attempt_duration_seconds_",
    "scheduler_framework_extension_point_duration_seconds_",
    "scheduler_schedule_attempts_total",
    "rest_client_rate_limiter_duration_seconds_",
    "process_cpu_seconds_total",
    "extender_request_duration_seconds_",
    "kubernetes_build_info",
    "kubernetes_feature_enabled",
    segments.START_TIME,
)
"""The series `reduce` reads (for `series.parse(text, prefixes=PREFIXES)`)."""


def reduce(samples: series.Samples) -> dict[str, float]:
    """One scrape (the scheduler's, the extender's, or both merged) as reduced keys, summed
    over the labels a key drops."""
    out: dict[str, float] = {}
    for key, value in samples.items():
        name = key.split("{", 1)[0]
        if not name.startswith(PREFIXES):
            continue
        short = _key(name, _labels(key))
        if short is not None:
            out[short] = out.get(short, 0.0) + value
    return out


def build_info(samples: series.Samples) -> tuple[str, dict[str, bool]]:
    """The component's release (`v1.37.2`, "" if it does not say) and feature gates, from
    `kubernetes_build_info` and `kubernetes_feature_enabled`."""
    release = ""
    gates: dict[str, bool] = {}
    for key, value in samples.items():
        if key.startswith("kubernetes_build_info{"):
            release = _labels(key).get("git_version", release)
        elif key.startswith("kubernetes_feature_enabled{"):
            name = _labels(key).get("name")
            if name:
                gates[name] = value == 1.0
    return release, gates


@dataclass
class Timeline:
    """Reduced scrapes at `seconds` since the run started; a key missing from a scrape is
    None there (a release without that series, a scrape that failed)."""

    seconds: list[float] = field(default_factory=list)
    values: dict[str, list[float | None]] = field(default_factory=dict)
    release: str = ""
    """kube-scheduler's `git_version` (from its first scrape)."""
    gates: dict[str, bool] = field(default_factory=dict)
    """kube-scheduler's feature gates (from its first scrape)."""

    def add(self, at: float, reduced: Mapping[str, float]) -> None:
        n = len(self.seconds)
        self.seconds.append(round(at, 3))
        for key in reduced.keys() - self.values.keys():
            self.values[key] = [None] * n
        for key, column in self.values.items():
            value = reduced.get(key)
            column.append(None if value is None else round(value, 6))

    def restarts(self) -> list[int]:
        """Indices of the samples that first met a new kube-scheduler process."""
        out, previous = [], None
        for i, start in enumerate(self.values.get(PROCESS_START, ())):
            if start is None:
                continue
            if previous is not None and start != previous:
                out.append(i)
            previous = start
        return out

    def thin(self) -> None:
        """Every other sample dropped (the first and last kept, and those on either side of
        a restart, so each process's last count stays): a long run stays small."""
        around = {j for i in self.restarts() for j in (i - 1, i)}
        keep = sorted({*range(0, len(self.seconds), 2), len(self.seconds) - 1, *around})
        self.seconds = [self.seconds[i] for i in keep]
        self.values = {k: [v[i] for i in keep] for k, v in self.values.items()}

    def change(self, key: str) -> float:
        """A counter's change over the run, summed over kube-scheduler's processes (the
        extender's counters: over theirs, seen as drops). Absent at the first sample counts
        as 0: a labelled counter appears only once it first counts (a fresh kube-scheduler
        has no `result="scheduled"` series before its first pod)."""
        return next((v for v in reversed(self.cumulative(key)) if v is not None), 0.0)

    def cumulative(self, key: str) -> list[float | None]:
        """A counter's growth since the first sample, at each sample, over its processes:
        rates from it stay true across a restart."""
        column = self.values.get(key, [])
        extenders = key.startswith((EXTENDER_SECONDS, EXTENDER_CALLS))
        return segments.running(column, () if extenders else set(self.restarts()))

    def gauge(self, key: str) -> list[float]:
        return [v for v in self.values.get(key, ()) if v is not None]

    def keys(self, prefix: str) -> list[str]:
        return sorted(k for k in self.values if k.startswith(prefix))


@dataclass(frozen=True)
class Totals:
    """The run's figures from the scheduler's view: what the console, the report and the
    detector read."""

    seconds: float
    pending_peak: dict[str, float]
    """Queue -> most pods pending in it at any sample."""
    pending_mean: dict[str, float]
    incoming: dict[str, float]
    """`<event>:<queue>` -> pods moved, the largest first."""
    event_seconds: dict[str, float]
    """Event -> seconds kube-scheduler spent handling it, the largest first."""
    hint_seconds: float
    hint_count: float
    attempts: float
    attempt_seconds: float
    algorithm_count: float
    algorithm_seconds: float
    point_seconds: dict[str, float]
    """Extension point -> seconds spent in it."""
    outside_points_seconds: float
    """Algorithm time outside its extension points: the extenders' calls as kube-scheduler
    saw them (and the node selection around them)."""
    extender_seconds: dict[str, float]
    """Verb -> seconds the extender took answering (its own /metrics)."""
    extender_calls: dict[str, float]
    throttle_seconds: float
    """Seconds kube-scheduler's API client waited on its own rate limiter."""
    cpu_seconds: float
    scheduled: float
    restarts: tuple[float, ...] = ()
    """Seconds at which a new kube-scheduler process was first sampled: the counters above
    are summed over its processes."""

    @property
    def attempt_mean(self) -> float:
        return self.attempt_seconds / self.attempts if self.attempts else 0.0

    @property
    def algorithm_mean(self) -> float:
        return self.algorithm_seconds / self.algorithm_count if self.algorithm_count else 0.0


def _ranked(d: Mapping[str, float], top: int) -> dict[str, float]:
    kept = sorted(((k, v) for k, v in d.items() if v > 0), key=lambda kv: -kv[1])[:top]
    return {k: round(v, 6) for k, v in kept}


def totals(t: Timeline, *, top: int = 12) -> Totals:
    """The totals of a timeline (its first sample is the baseline)."""

    def by(prefix: str) -> dict[str, float]:
        return {k[len(prefix) :]: t.change(k) for k in t.keys(prefix)}

    points = by(POINT_SECONDS)
    algorithm_seconds = t.change("algorithm_seconds")
    inside = sum(points.get(p, 0.0) for p in ALGORITHM_POINTS)
    pending = {k[len(PENDING) :]: t.gauge(k) for k in t.keys(PENDING)}
    return Totals(
        seconds=(t.seconds[-1] - t.seconds[0]) if t.seconds else 0.0,
        pending_peak={q: max(v) for q, v in pending.items() if v},
        pending_mean={q: round(sum(v) / len(v), 1) for q, v in pending.items() if v},
        incoming=_ranked(by(INCOMING), top),
        event_seconds=_ranked(by(EVENT_SECONDS), top),
        hint_seconds=t.change("hint_seconds"),
        hint_count=t.change("hint_count"),
        attempts=t.change("attempts"),
        attempt_seconds=t.change("attempt_seconds"),
        algorithm_count=t.change("algorithm_count"),
        algorithm_seconds=algorithm_seconds,
        point_seconds=_ranked(points, top),
        outside_points_seconds=max(0.0, algorithm_seconds - inside),
        extender_seconds=by(EXTENDER_SECONDS),
        extender_calls=by(EXTENDER_CALLS),
        throttle_seconds=t.change("throttle_seconds"),
        cpu_seconds=t.change("cpu_seconds"),
        scheduled=t.change("scheduled"),
        restarts=tuple(t.seconds[i] for i in t.restarts()),
    )


def merged(*scrapes: series.Samples | None) -> series.Samples:
    """Several components' scrapes taken together as one sample (scheduler and extender)."""
    out: series.Samples = {}
    for s in scrapes:
        if s:
            out.update(s)
    return out


def mean_per_interval(
    t: Timeline, seconds_key: str, count_key: str
) -> tuple[Sequence[float], Sequence[float]]:
    """(x, mean seconds per event) between consecutive samples, e.g. the algorithm's mean
    duration per attempt over time; intervals with no event are left out."""
    xs, ys = [], []
    s, c = t.cumulative(seconds_key), t.cumulative(count_key)
    for i in range(1, min(len(s), len(c))):
        s0, s1, c0, c1 = s[i - 1], s[i], c[i - 1], c[i]
        if None in (s0, s1, c0, c1):
            continue
        assert s0 is not None and s1 is not None and c0 is not None and c1 is not None
        if c1 > c0:
            xs.append(t.seconds[i])
            ys.append((s1 - s0) / (c1 - c0))
    return xs, ys
