"""`loadgen compare A.json B.json`: metric, previous, current and % difference, in human
units, with whether each change is for the better; `--html` adds the runs' charts.

A change counts only past the runs' own noise: each figure's 95 % sampling interval, from the
run's own spread (a latency percentile's from its distribution and pod count, distribution
free: the order statistics that bracket it; a throughput's from the per-second rates; a share's
binomial), combined over both runs, and never less than a floor. Within it, "same".
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from loadgen import stats
from loadgen.report.document import ResultDoc
from testbed import units

# Metrics where a bigger number is better.
_HIGHER_IS_BETTER = ("throughput", "pods running")
Z = 1.96
"""Two-sided 95 % normal quantile: the sampling intervals are 95 % intervals."""
DEFAULT_FLOOR_PERCENT = 2.0
"""The least change that counts, whatever the noise: below it nobody acts on a difference."""


@dataclass(frozen=True)
class Change:
    metric: str
    previous: float
    current: float
    change_percent: float | None
    """None when previous is 0."""
    noise_percent: float
    """The runs' combined 95 % sampling noise of this figure, in % of it; infinite when the
    runs hold too few samples to bound it (then no change counts)."""
    threshold_percent: float
    """The least change that counts here: the noise, at least the floor."""
    judgement: str
    """better, worse, same (within the threshold) or n/a (previous was 0)."""


def load(doc: ResultDoc) -> dict[str, object]:
    """What a run asked of the cluster: its scenario, each phase's kind, objects and claim,
    the pods expected and the offered rate (qps, arrival). Two runs compare only under one
    load: a 10,000-pod run's latencies against a 200-pod run's measure the load, not the
    change."""
    phases = doc.scenario.get("phases")
    claims = {
        str(p.get("name")): p.get("claim")
        for p in (phases if isinstance(phases, list) else [])
        if isinstance(p, dict)
    }
    return {
        "scenario": doc.scenario.get("name"),
        "pods": doc.counts.expected_pods,
        "phases": [(p.name, p.kind, p.objects) for p in doc.phases],
        "claims": claims,
        "qps": doc.settings.get("qps"),
        "arrival": doc.settings.get("arrival"),
    }


def load_differences(prev: Runs, cur: Runs) -> list[str]:
    """How the loads of the runs differ (empty when every run has the first's load), each
    as `what: first's vs other's`."""
    docs = [prev] if isinstance(prev, ResultDoc) else list(prev)
    docs += [cur] if isinstance(cur, ResultDoc) else list(cur)
    first = load(docs[0])
    out: list[str] = []
    for doc in docs[1:]:
        other = load(doc)
        for key, value in first.items():
            if other[key] == value or any(line.startswith(f"{key}:") for line in out):
                continue
            if key == "claims":
                out.append(f"claims: {docs[0].run_id} and {doc.run_id} ask for other devices")
            else:
                out.append(
                    f"{key}: {_shown(key, value)} ({docs[0].run_id}) vs "
                    f"{_shown(key, other[key])} ({doc.run_id})"
                )
    return out


def _shown(key: str, value: object) -> str:
    if key == "pods" and isinstance(value, int):
        return units.count(value)
    if key == "phases" and isinstance(value, list):
        return ", ".join(f"{name} {kind} x{units.count(n)}" for name, kind, n in value)
    return str(value)


def rows(prev: ResultDoc, cur: ResultDoc) -> list[tuple[str, float, float, float | None]]:
    """(metric, previous, current, % change or None when previous is 0)."""
    return [(c.metric, c.previous, c.current, c.change_percent) for c in changes(prev, cur)]


Runs = ResultDoc | Sequence[ResultDoc]
"""One run, or repeats of the same configuration."""


def changes(prev: Runs, cur: Runs, floor_percent: float = DEFAULT_FLOOR_PERCENT) -> list[Change]:
    """Every figure of both sides (means over repeats), judged against their noise, at least
    `floor_percent`. With repeats on both sides the noise is the repeats' own spread (Welch's
    95 % interval of the difference of the means); with one run on either side, each run's
    own sampling noise combined."""
    a_runs = [prev] if isinstance(prev, ResultDoc) else list(prev)
    b_runs = [cur] if isinstance(cur, ResultDoc) else list(cur)
    out: list[Change] = []
    for metric in _metrics(a_runs + b_runs):
        a_values = [metric.value(d) for d in a_runs]
        b_values = [metric.value(d) for d in b_runs]
        a, b = _mean(a_values), _mean(b_values)
        if not (a or b):  # zero in both (run_to_watch, by definition) says nothing
            continue
        pct = (b - a) / a * 100.0 if a else None
        if len(a_runs) > 1 and len(b_runs) > 1:
            noise = welch_noise(a_values, b_values)
        else:
            noise = combined_noise(
                _mean([metric.noise(d) for d in a_runs]), _mean([metric.noise(d) for d in b_runs])
            )
        threshold = max(floor_percent, noise)
        out.append(
            Change(metric.name, a, b, pct, noise, threshold, _judge(metric.name, pct, threshold))
        )
    return out


@dataclass(frozen=True)
class _Metric:
    name: str
    value: Callable[[ResultDoc], float]
    noise: Callable[[ResultDoc], float]


def _metrics(docs: Sequence[ResultDoc]) -> list[_Metric]:
    """The figures every one of `docs` has."""
    out: list[_Metric] = []
    for phase in stats.PHASES:
        if any(phase not in d.latency_ms for d in docs):
            continue
        for stat in ("Perc50", "Perc90", "Perc99"):
            out.append(
                _Metric(
                    f"{phase} {stat} (ms)",
                    _latency_value(phase, stat),
                    _latency_noise(phase, _P[stat]),
                )
            )
    for stat in ("Average", "Perc50", "Perc90", "Perc99"):
        out.append(
            _Metric(
                f"throughput {stat} (pods/s)",
                _throughput_value(stat),
                _throughput_noise(stat),
            )
        )
    out += [
        # Its distribution is not kept in a result: its noise is unknown, so it is never judged.
        _Metric("claim allocation Perc99 (ms)", lambda d: d.claims.allocation_ms.Perc99, _unknown),
        _Metric("pods running", lambda d: float(d.counts.pods_running), _none),
        _Metric("duration (s)", lambda d: d.duration_seconds, _throughput_noise("Average")),
    ]
    if any(d.claims.gpu_nic_pairs for d in docs):
        out.append(
            _Metric(
                "GPU-NIC PCIe-aligned share (%)",
                lambda d: _share(d.claims.pcie_aligned_pairs, d.claims.gpu_nic_pairs),
                _aligned_noise,
            )
        )
    return out


def _latency_value(phase: str, stat: str) -> Callable[[ResultDoc], float]:
    return lambda d: float(getattr(d.latency_ms[phase], stat))


def _throughput_value(stat: str) -> Callable[[ResultDoc], float]:
    return lambda d: float(getattr(d.throughput, stat))


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def combined_noise(a: float, b: float) -> float:
    """The noise of a difference of two runs' figures, from each one's own (in %)."""
    return math.hypot(a, b)


def welch_noise(a: Sequence[float], b: Sequence[float]) -> float:
    """Half the width of Welch's 95 % interval of mean(b) - mean(a), in % of mean(a)."""
    from scipy import stats as scipy_stats  # loaded only when repeats are compared

    mean_a = _mean(a)
    va = sum((x - mean_a) ** 2 for x in a) / (len(a) - 1) / len(a)
    mean_b = _mean(b)
    vb = sum((x - mean_b) ** 2 for x in b) / (len(b) - 1) / len(b)
    if mean_a == 0 or va + vb == 0:
        return 0.0
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    t = float(scipy_stats.t.ppf(0.975, df))
    return t * math.sqrt(va + vb) / abs(mean_a) * 100.0


def regressions(found: Sequence[Change]) -> list[Change]:
    """The changes for the worse past their threshold (`--fail-on-regression`)."""
    return [c for c in found if c.judgement == "worse"]


# -- each run's own noise, in % of the figure (0 where it cannot be known) ---------------------

_P = {"Perc50": 0.50, "Perc90": 0.90, "Perc95": 0.95, "Perc99": 0.99}


def _none(_doc: ResultDoc) -> float:
    return 0.0


def _unknown(_doc: ResultDoc) -> float:
    return math.inf


def _quantile(points: Sequence[tuple[float, float]], fraction: float) -> float:
    """The value at `fraction` of a (value, fraction <= value) CDF: nearest rank above."""
    for value, at in points:
        if at >= fraction:
            return value
    return points[-1][0]


MIN_TAIL_SAMPLES = 2
"""Samples expected beyond a quantile (n * min(p, 1-p)) for it to have an interval: the p99 of
200 pods has one (two pods expected above it), that of 150 pods does not (it is one of the
two largest, and nothing in the run says how far it could move)."""
NORMAL_TAIL_SAMPLES = 5
"""Beyond it, the ranks n*p -+ Z*sqrt(n*p*(1-p)) (the binomial's normal approximation) bracket
the quantile; below it, or where the upper rank runs past the largest sample, the interval
is widened to its whole span (see `quantile_noise`)."""


def quantile_noise(points: Sequence[tuple[float, float]], n: int, p: float) -> float:
    """Half the width of the distribution-free 95 % interval of the p-quantile of `n`
    samples whose CDF is `points`, in % of the quantile: the values at the ranks
    n*p -+ Z*sqrt(n*p*(1-p)); infinite with too few samples in the tail.

    Where the tail holds fewer than NORMAL_TAIL_SAMPLES, or the upper rank runs past the
    largest sample (the p99 of fewer than ~380 pods), the run cannot give the interval's
    upper end: the whole span from its lower end to the largest sample counts as the half
    width instead. Calibrated by simulation (tests/unit/loadgen/test_compare_noise.py): at
    200 pods the p99 of two runs of one distribution differs past the combined threshold in
    at most ~2 % of pairs (lognormal, exponential, uniform), and a tripled p99 is flagged
    in ~98 %."""
    tail = n * min(p, 1 - p)
    if not points or tail < MIN_TAIL_SAMPLES:
        return math.inf
    reach = Z * math.sqrt(p * (1 - p) / n)
    q = _quantile(points, p)
    if q <= 0:
        return 0.0
    low, high = _quantile(points, max(0.0, p - reach)), _quantile(points, min(1.0, p + reach))
    if tail < NORMAL_TAIL_SAMPLES or p + reach > 1.0:
        return (points[-1][0] - low) / q * 100.0
    return (high - low) / 2 / q * 100.0


def mean_noise(samples: Sequence[float]) -> float:
    """Half the width of the 95 % Student's t interval of the mean of `samples`, in % of the
    mean; infinite with fewer than two."""
    from scipy import stats as scipy_stats  # loaded only when runs are compared

    n = len(samples)
    mean = sum(samples) / n if n else 0.0
    if n < 2 or mean <= 0:
        return math.inf
    var = sum((x - mean) ** 2 for x in samples) / (n - 1)
    return float(scipy_stats.t.ppf(0.975, n - 1)) * math.sqrt(var / n) / mean * 100.0


def _latency_noise(phase: str, p: float) -> Callable[[ResultDoc], float]:
    def noise(doc: ResultDoc) -> float:
        summary = doc.latency_ms.get(phase)
        return quantile_noise(doc.cdf_ms.get(phase, []), summary.count if summary else 0, p)

    return noise


def _rates(doc: ResultDoc) -> list[float]:
    t = doc.timeline
    return stats.sampled_rates(zip(t.seconds, t.scheduled, strict=False))


def _throughput_noise(stat: str) -> Callable[[ResultDoc], float]:
    def noise(doc: ResultDoc) -> float:
        rates = sorted(_rates(doc))
        if stat == "Average":
            return mean_noise(rates)
        n = len(rates)
        points = [(r, (i + 1) / n) for i, r in enumerate(rates)]
        return quantile_noise(points, n, _P[stat])

    return noise


def _aligned_noise(doc: ResultDoc) -> float:
    n, k = doc.claims.gpu_nic_pairs, doc.claims.pcie_aligned_pairs
    if not n or not k:
        return 0.0
    p = k / n
    return Z * math.sqrt(p * (1 - p) / n) / p * 100.0


def _share(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 0.0


def higher_is_better(metric: str) -> bool:
    return metric.startswith(_HIGHER_IS_BETTER) or "aligned" in metric


# "name (unit)": the unit decides the formatting.
_UNIT = re.compile(r"^(?P<name>.*) \((?P<unit>[^)]*)\)$")
_FORMAT: dict[str, Callable[[float], str]] = {
    "ms": units.millis,
    "s": units.duration,
    "%": lambda v: f"{v:.1f} %",
    "pods/s": lambda v: f"{v:,.1f} pods/s",
}


def human(metric: str, value: float) -> str:
    """A row's value in the unit its metric name gives: ms and s as durations, % and
    pods/s with one decimal, anything else a count."""
    m = _UNIT.match(metric)
    fmt = _FORMAT.get(m["unit"]) if m else None
    return fmt(value) if fmt else units.count(value)


def judgement(metric: str, pct: float | None) -> str:
    """better, worse, same or n/a (previous was zero) for a row's change, noise aside."""
    return _judge(metric, pct, 0.0)


def _judge(metric: str, pct: float | None, threshold: float) -> str:
    if pct is None:
        return "n/a"
    if abs(pct) <= threshold:
        return "same"
    return "better" if (pct > 0) == higher_is_better(metric) else "worse"


def name_of(metric: str) -> str:
    """The metric without its unit (the formatted values carry it)."""
    m = _UNIT.match(metric)
    return m["name"] if m else metric


def formatted(
    prev: ResultDoc, cur: ResultDoc, floor_percent: float = DEFAULT_FLOOR_PERCENT
) -> list[tuple[str, str, str, str, str]]:
    """`changes` ready to print: metric (unit dropped: the values carry it), previous,
    current, change and its judgement."""
    return [
        (
            name_of(c.metric),
            human(c.metric, c.previous),
            human(c.metric, c.current),
            units.change(c.change_percent),
            c.judgement,
        )
        for c in changes(prev, cur, floor_percent)
    ]
