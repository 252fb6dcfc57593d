"""Spread and verdicts over repeats (pure): median, min–max, a seeded bootstrap 95 % interval of
an A/B ratio of medians, and a verdict that is "met" or "missed" only when the interval clears
the threshold ("inconclusive" otherwise). One repeat has no spread: its interval is the point,
and every verdict from it says "single run".
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

RESAMPLES = 2000
CONFIDENCE = 0.95
SINGLE_RUN = "single run"


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    runs: int
    """Repeats behind it (the fewer of the two arms' for a ratio)."""

    @property
    def single_run(self) -> bool:
        return self.runs < 2

    def contains(self, x: float) -> bool:
        return self.low <= x <= self.high


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def min_max(values: Sequence[float]) -> tuple[float, float]:
    return (min(values), max(values)) if values else (math.nan, math.nan)


def _percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (ceil(n*q)-th value), as the rest of the project reports."""
    k = max(1, math.ceil(len(sorted_values) * q))
    return sorted_values[min(k, len(sorted_values)) - 1]


def _bootstrap(
    statistic: Callable[[random.Random], float], *, seed: int, resamples: int
) -> tuple[float, float]:
    rng = random.Random(seed)
    draws = sorted(v for _ in range(resamples) if not math.isnan(v := statistic(rng)))
    if not draws:
        return math.nan, math.nan
    tail = (1 - CONFIDENCE) / 2
    return _percentile(draws, tail), _percentile(draws, 1 - tail)


def _resample(values: Sequence[float], rng: random.Random) -> list[float]:
    return [values[rng.randrange(len(values))] for _ in values]


def median_interval(
    values: Sequence[float], *, seed: int = 0, resamples: int = RESAMPLES
) -> Interval | None:
    """Bootstrap 95 % interval of the median of `values` (None without values)."""
    if not values:
        return None
    if len(values) == 1:
        return Interval(values[0], values[0], 1)
    low, high = _bootstrap(
        lambda rng: statistics.median(_resample(values, rng)), seed=seed, resamples=resamples
    )
    return Interval(low, high, len(values))


def ratio_interval(
    a: Sequence[float], b: Sequence[float], *, seed: int = 0, resamples: int = RESAMPLES
) -> Interval | None:
    """Bootstrap 95 % interval of median(a) / median(b), each arm resampled on its own (the
    arms ran in alternating order, so their repeats are not paired); None when a ratio cannot
    be formed (an arm without values, or b's median zero)."""
    if not a or not b or median(b) == 0:
        return None
    runs = min(len(a), len(b))
    if runs == 1 and len(a) == len(b):
        point = median(a) / median(b)
        return Interval(point, point, 1)

    def ratio(rng: random.Random) -> float:
        bottom = statistics.median(_resample(b, rng))
        return statistics.median(_resample(a, rng)) / bottom if bottom else math.nan

    low, high = _bootstrap(ratio, seed=seed, resamples=resamples)
    return Interval(low, high, runs)


def verdict(interval: Interval | None, threshold: float, *, at_least: bool) -> str:
    """ "met" when the whole interval is on the good side of `threshold` (>= it with
    `at_least`, else <= it), "missed" when the whole interval is on the bad side,
    "inconclusive" when it straddles; "not measured" without an interval. A verdict from one
    repeat carries "(single run)"."""
    if interval is None:
        return "not measured"
    if at_least:
        good, bad = interval.low >= threshold, interval.high < threshold
    else:
        good, bad = interval.high <= threshold, interval.low > threshold
    word = "met" if good else "missed" if bad else "inconclusive"
    return f"{word} ({SINGLE_RUN})" if interval.single_run else word


def describe(interval: Interval | None, fmt: Callable[[float], str] = "{:.3g}".format) -> str:
    """`[low, high]`, or the point and "single run"."""
    if interval is None:
        return "-"
    if interval.single_run:
        return f"{fmt(interval.low)} ({SINGLE_RUN})"
    return f"[{fmt(interval.low)}, {fmt(interval.high)}]"
