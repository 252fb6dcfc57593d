"""Spread, intervals and verdicts over repeats (pure).

A comparison's two arms of one repeat run back to back, so a repeat is a pair and the pairs
are what is analysed (blocks, as in a paired design): per repeat the log of the A/B ratio,
then Student's t over those log-ratios (scipy.stats): a 95 % interval of the ratio's geometric
mean (exp of the interval of the mean log-ratio) and a two-sided one-sample t-test of the
log-ratios against log(threshold). Assumptions: the repeats are independent, and each
repeat's log-ratio is the true log-ratio plus noise that is roughly normal with the same
spread in every repeat (order effects cancel because the order alternates; a constant
order effect only widens the interval). `tests/unit/experiment/test_calibration.py` checks
the coverage and the false-verdict rate by simulation at the repeat counts the project runs.

Where a repeat measured 0 in an arm (a probe that placed nothing), a log-ratio does not exist:
the test then runs on the paired differences A - threshold x B, which have the same sign as
the ratio's side of the threshold, and no ratio interval is shown.

A verdict ("met" or "missed") needs the test significant at its level and so the interval at
that level strictly past the threshold (touching it is not past it); otherwise "inconclusive",
with the smallest difference the pairs still affordable could detect at the spread seen (80 %
power). The level is 0.05 for a fixed number of repeats, or a sequential look's share of it
(`experiment.design`). One repeat is an observation, never a verdict.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

CONFIDENCE = 0.95
ALPHA = 1 - CONFIDENCE
POWER = 0.8
"""Power at which the minimum detectable effect (`detectable`) is stated."""
OBSERVATION = "observation (1 repeat), no verdict"
METHOD = (
    "each repeat's two arms ran back to back (order alternating), so repeats are pairs: "
    "per repeat the log of the A/B ratio; Student's t over the log-ratios gives the "
    f"{CONFIDENCE:.0%} interval of the ratio (geometric mean) and a two-sided t-test against "
    "the threshold (scipy.stats). Assumes independent repeats and roughly normal log-ratio "
    "noise of equal spread; calibrated by simulation (coverage and false-verdict rate). A "
    f"repeat with a 0 is tested on the differences A - threshold x B instead. A verdict needs "
    f"p < {ALPHA:.2f} (a sequential design's look: its share of it) and that interval strictly "
    "past the threshold, else inconclusive with the smallest difference the pairs still "
    "affordable could detect at the spread seen; one repeat is an observation, never a verdict"
)
"""The method and its assumptions, in words, for every report."""

Scale = Literal["log", "linear", "absolute"]


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    runs: int
    """Paired repeats behind it (values behind it for an absolute figure)."""
    pairs: tuple[tuple[float, float], ...] = field(default=(), compare=False)
    """The (A, B) values per repeat the verdict tests; (value, 1) for an absolute figure."""
    scale: Scale = "log"
    """"log": ratios, tested as log-ratios; "linear": ratios with a 0 in some repeat,
    tested as A - threshold x B (no interval: low and high are NaN); "absolute": one
    arm's values against an absolute threshold."""

    @property
    def point(self) -> float:
        """The estimate the interval is around: the geometric mean of the paired ratios, the
        ratio of the sums (a repeat measured 0), or the mean of an absolute figure."""
        if self.scale == "log":
            return math.exp(math.fsum(math.log(x / y) for x, y in self.pairs) / len(self.pairs))
        if self.scale == "linear":
            bottom = math.fsum(y for _, y in self.pairs)
            return math.fsum(x for x, _ in self.pairs) / bottom if bottom else math.nan
        return math.fsum(x for x, _ in self.pairs) / len(self.pairs)

    @property
    def single_run(self) -> bool:
        return self.runs < 2

    @property
    def defined(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))

    def contains(self, x: float) -> bool:
        return self.low <= x <= self.high


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def min_max(values: Sequence[float]) -> tuple[float, float]:
    return (min(values), max(values)) if values else (math.nan, math.nan)


@functools.cache
def _t(df: int, q: float = 1 - ALPHA / 2) -> float:
    return float(stats.t.ppf(q, df))


def _mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value)."""
    n = len(values)
    m = math.fsum(values) / n
    return m, math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0


def _mean_interval(values: Sequence[float]) -> tuple[float, float]:
    """Student's t interval of the mean (the point when every value is the same)."""
    m, sd = _mean_sd(values)
    if sd == 0:
        return m, m
    half = _t(len(values) - 1) * sd / math.sqrt(len(values))
    return m - half, m + half


def ratio_interval(a: Sequence[float], b: Sequence[float]) -> Interval | None:
    """Interval of the A/B ratio from repeats paired by position (a[i] and b[i] ran in the
    same repeat; pass `paired` output when arms may be missing). None when there is no pair
    or B is 0 in every repeat."""
    if len(a) != len(b):
        raise ValueError(f"unpaired repeats: {len(a)} A values, {len(b)} B values")
    pairs = tuple((float(x), float(y)) for x, y in zip(a, b, strict=True) if x == x and y == y)
    if not pairs or all(y == 0 for _, y in pairs):
        return None
    if all(x > 0 and y > 0 for x, y in pairs):
        low, high = _mean_interval([math.log(x / y) for x, y in pairs])
        return Interval(math.exp(low), math.exp(high), len(pairs), pairs, "log")
    if len(pairs) == 1:
        x, y = pairs[0]
        point = x / y if y else math.nan
        return Interval(point, point, 1, pairs, "linear")
    return Interval(math.nan, math.nan, len(pairs), pairs, "linear")


def mean_interval(values: Sequence[float]) -> Interval | None:
    """Student's t interval of the mean of one arm's values (an absolute figure)."""
    clean = [float(v) for v in values if v == v]
    if not clean:
        return None
    low, high = _mean_interval(clean)
    return Interval(low, high, len(clean), tuple((v, 1.0) for v in clean), "absolute")


def paired(
    a: Sequence[float], a_repeats: Sequence[int], b: Sequence[float], b_repeats: Sequence[int]
) -> tuple[list[float], list[float]]:
    """A's and B's values of the repeats both have, in repeat order (a repeat whose other
    arm is missing or invalid has no pair and is left out)."""
    by_a = dict(zip(a_repeats, a, strict=True))
    by_b = dict(zip(b_repeats, b, strict=True))
    common = sorted(set(by_a) & set(by_b))
    return [by_a[r] for r in common], [by_b[r] for r in common]


def _differences(interval: Interval, threshold: float) -> list[float]:
    """Per repeat, the quantity whose mean is 0 exactly when the figure is at the threshold."""
    if interval.scale == "log":
        return [math.log(x / y) - math.log(threshold) for x, y in interval.pairs]
    return [x - threshold * y for x, y in interval.pairs]


def decisions(d: npt.ArrayLike, level: float = ALPHA) -> npt.NDArray[np.int8]:
    """Per row of `d` (worlds x repeats: the differences from the threshold), +1 when the
    two-sided one-sample Student's t-test at `level` puts the mean above 0, -1 below, 0 when
    it cannot tell. The (1 - level) t interval excludes 0 exactly then, so this is also
    "the interval strictly past the threshold". Every verdict is made here, one world or
    20,000 at once (the calibration test). A row without spread decides by its mean's sign
    (0 when on the threshold); a level of 0 (before a design's first look) never decides."""
    x = np.atleast_2d(np.asarray(d, dtype=float))
    n = x.shape[1]
    out = np.zeros(x.shape[0], dtype=np.int8)
    if n < 2 or level <= 0:
        return out
    m = x.mean(axis=1)
    sd = x.std(axis=1, ddof=1)
    half = _t(n - 1, 1 - level / 2) * sd / math.sqrt(n)
    out[m - half > 0] = 1
    out[m + half < 0] = -1
    flat = sd == 0
    out[flat] = np.sign(m[flat]).astype(np.int8)
    return out


def detectable(d: Sequence[float], pairs: int, level: float = ALPHA) -> float | None:
    """The smallest mean difference from the threshold a two-sided t-test at `level` tells
    with POWER at `pairs` pairs, at the spread of `d` (the minimum detectable effect; on
    the log scale for ratios). None without a spread to judge by."""
    _, sd = _mean_sd(d)
    if len(d) < 2 or pairs < 2 or not level > 0:
        return None
    return (_t(pairs - 1, 1 - level / 2) + _t(pairs - 1, POWER)) * sd / math.sqrt(pairs)


def _detect_text(interval: Interval, threshold: float, pairs: int, level: float) -> str:
    d = _differences(interval, threshold)
    delta = detectable(d, pairs, level)
    if delta is None:
        return ""
    if interval.scale == "log":
        low, high = threshold * math.exp(-delta), threshold * math.exp(delta)
        return (
            f"at this spread {pairs} pairs tell a ratio <= {low:.3g} or >= {high:.3g} "
            f"({POWER:.0%} power)"
        )
    return (
        f"at this spread {pairs} pairs tell A - {threshold:g} x B beyond +-{delta:.3g} "
        f"({POWER:.0%} power)"
    )


def verdict(
    interval: Interval | None,
    threshold: float,
    *,
    at_least: bool,
    strict: bool = False,
    level: float = ALPHA,
    pairs_left: int = 0,
    detect_at: tuple[int, float] | None = None,
) -> str:
    """ "met" when the test against `threshold` at `level` (ALPHA, or a sequential look's
    share of it: `experiment.design`) is significant and the interval lies on the good side
    (above it with `at_least`, else below), "missed" when on the bad side, else
    "inconclusive (...)" with what the pairs there are, and `pairs_left` more (what the
    budget still affords), can detect at the spread seen (`detect_at`: at (pairs, level)
    instead, e.g. a sequential design's first look); "not measured" without an
    interval and OBSERVATION from one repeat. `strict` (a gain is needed): every repeat
    exactly at the threshold is "missed", not inconclusive."""
    if interval is None:
        return "not measured"
    if interval.single_run:
        return OBSERVATION
    d = _differences(interval, threshold)
    m, sd = _mean_sd(d)
    if sd == 0 and m == 0:
        return "missed" if strict else "inconclusive (every repeat on the threshold)"
    way = int(decisions([d], level)[0])
    if way:
        return "met" if (way > 0) == at_least else "missed"
    pairs, detect_level = detect_at or (len(d) + pairs_left, level)
    detect = _detect_text(interval, threshold, pairs, detect_level)
    if level <= 0:
        return "inconclusive (before the design's first look" + (f"; {detect})" if detect else ")")
    return f"inconclusive ({detect})" if detect else "inconclusive"


def is_verdict(text: str) -> bool:
    """Whether a verdict string is a verdict (met or missed), not an observation."""
    return text in ("met", "missed")


def describe(interval: Interval | None, fmt: Callable[[float], str] = "{:.3g}".format) -> str:
    """`[low, high]`; the point and "1 repeat"; or why there is none."""
    if interval is None:
        return "-"
    if interval.single_run:
        return f"{fmt(interval.low)} (1 repeat)" if interval.defined else "- (1 repeat)"
    if not interval.defined:
        return "- (a repeat measured 0: tested on differences)"
    return f"[{fmt(interval.low)}, {fmt(interval.high)}]"
