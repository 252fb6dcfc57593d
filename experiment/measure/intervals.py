"""Spread, intervals and verdicts over repeats (pure).

A comparison's two arms of one repeat run back to back, so a repeat is a pair and the pairs
are what is analysed (blocks, as in a paired design): per repeat the log of the A/B ratio,
then a trimmed Student's t over those log-ratios: the mean of the log-ratios left once the
floor(TRIM x n) lowest and highest are set aside (none below 10 pairs), its standard error from
the winsorised spread (Tukey and McLaughlin), and DF_PER_TRIMMED fewer degrees of freedom per
pair trimmed from each end than Tukey and McLaughlin's n - 2g - 1. That gives a 95 % interval
of the ratio (exp of the interval of the trimmed mean log-ratio) and a two-sided test against
log(threshold), one and the same: the interval at a test's level excludes the threshold
exactly when the test is significant. Below 10 pairs nothing is trimmed and it is Student's t.

Why trimmed: a shared machine slows one arm alone now and then (a background burst), which
skews the log-ratios to one side; Student's t on their mean then gave up to 12.6 % false
verdicts where it promised 5 % (one arm slowed by 5 sd in 1 pair of 10, the 24-pair sequential
design of `experiment.plan.design`; 18 % in a fixed design of 24). Set aside at an end, such a pair
moves the estimate little. Where one side has more outliers (past OUTLIER_MADS robust standard
deviations of the median) than the test sets aside, at least one is in the estimate, and there
is no verdict (`_lopsided`): the trimmed t alone still gave 6.6 % at 24 fixed pairs. Outliers
are reported beside the verdict (`outliers`).
Chosen by simulation (`bench/verdict_methods.py`, 200,000 worlds a cell; docs/results/narrative/,
entry "Which test the verdicts use") over normal, t (3 df),
symmetric and one-sided outlier noise, every look of that design, closing looks after 5, 8,
13 and 20 pairs and fixed designs of 8, 16 and 24: at most 5.1 % false verdicts with normal
noise (Student's t's own, where nothing is trimmed) and 4.9 % with one-sided outliers, against
Student's t's 18 %, the trimmed t without the outlier rule's 6.6 %, 20 % trimming's 7.1 %,
Wilcoxon's signed ranks' 11.7 % and 6-14 % for dropping the pairs past 3.5 MADs and testing
the rest; and at 34 s a pair a true 1.134 against 1.10 at a log-ratio spread of 0.028 is
decided in 99.3 % of runs (Student's t: 99.8 %; at 60 s a pair, closing after 14, 91.6 % and
96.1 %). Bursts of 3 sd are flagged less often and still give up to 8.8 % (6.7 % with every
planned look; every method tried: 8.5-14.7 % in its worst cell). The fewer degrees of freedom
are what Tukey and McLaughlin's statistic needs to hold its level with normal noise at these
pair counts: with n - 2g - 1, each test rejects 3-29 % more often than its level at 10-24
pairs (400,000 worlds a pair count).
Assumptions: the repeats are independent, and the log-ratios' noise is roughly symmetric,
outliers aside (order effects cancel because the order alternates; a constant order effect
only widens the interval). `tests/unit/experiment/test_calibration.py` checks the false-verdict
rate by simulation at the repeat counts the project runs.

Where a repeat measured 0 in an arm of a figure that may be 0 (a probe that placed nothing),
a log-ratio does not exist: the test then runs on the paired differences A - threshold x B,
which have the same sign as the ratio's side of the threshold, and no ratio interval is shown.
A cost (CPU, time, throughput: `Kind`) cannot be 0 or less: a repeat where it is, or where
either arm's value is missing or infinite, is refused, its pair dropped and counted
(`Interval.refused`), never judged.

A verdict ("met" or "missed") needs the test significant at its level and so the interval at
that level strictly past the threshold (touching it is not past it); otherwise "inconclusive",
with the smallest difference the pairs still affordable could detect at the spread seen (80 %
power). The level is 0.05 for a fixed number of repeats, or a sequential look's share of it
(`experiment.plan.design`); the interval stated beside a verdict is the one at its level
(`describe`). A figure the same in every repeat is judged by its side of the threshold only
where it is a count (exact by definition); a measured one without spread has no verdict. One
repeat is an observation, never a verdict.
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
TRIM = 0.1
"""Share of the pairs set aside at each end before the test: floor(TRIM x n) of them."""
DF_PER_TRIMMED = 1
"""Degrees of freedom given up per pair trimmed from each end, beyond Tukey and McLaughlin's
n - 2g - 1: what keeps the trimmed t at its level with normal noise at 10-24 pairs."""
OUTLIER_MADS = 3.0
"""A pair whose difference from the threshold (its log-ratio's, for a ratio) lies more than
this many robust standard deviations (1.4826 x the median absolute deviation) from the pairs'
median is an outlier (Iglewicz and Hoaglin's modified z-score): reported beside the verdict,
and from 10 pairs a verdict is withheld when one side has more of them than the trimmed test
sets aside (`decisions`). Normal noise flags one or more in about 1 run in 5 (withheld: 4 % of
runs at 10-16 pairs, 1 % at 24); a pair one arm slowed alone by 5 standard deviations is
flagged in 86-93 % of runs at 10-24 pairs."""
OUTLIERS_FROM = 4
"""Fewest pairs outliers are looked for in (fewer have no "others" to lie outside of)."""
OBSERVATION = "observation (1 repeat), no verdict"
METHOD = (
    "each repeat's two arms ran back to back (order alternating), so repeats are pairs: "
    "per repeat the log of the A/B ratio; a trimmed Student's t over the log-ratios (the "
    f"{TRIM:.0%} lowest and highest set aside from 10 pairs on, winsorised spread, "
    f"{DF_PER_TRIMMED} degree of freedom fewer per pair set aside at each end) gives the "
    "interval of the ratio and a two-sided test against the threshold (scipy.stats): one arm "
    "slowed alone in a repeat moves it little; pairs past "
    f"{OUTLIER_MADS:g} robust sd of the median are reported as outliers, and from 10 pairs "
    "there is no verdict while one side has more of them than the test sets aside. Assumes "
    "independent repeats and roughly "
    "symmetric log-ratio noise; calibrated by simulation (false-verdict rate with normal, "
    "heavy-tailed and outlier noise). A cost (CPU, time, throughput) 0 or less, or a value "
    "missing or infinite, drops its pair (counted); a repeat with a 0 in a figure that may be "
    f"0 is tested on the differences A - threshold x B instead. A verdict needs p < {ALPHA:.2f} "
    "(a sequential design's look: its share of it) and the interval at that level strictly "
    "past the threshold, else inconclusive with the smallest difference the pairs still "
    "affordable could detect at the spread seen; a measured figure without spread has no "
    "verdict (only a count is exact); one repeat is an observation, never a verdict"
)
"""The method and its assumptions, in words, for every report."""

Scale = Literal["log", "linear", "absolute"]
Kind = Literal["cost", "measured", "count"]
"""What a figure is, which decides what it may be and how it is judged: "cost", a measured CPU,
time or throughput figure, is never 0 or less (a pair with such a value is refused); a
"count" (pods placed, nodes spanned) is exact by definition, so the same value in every
repeat is judged by its side of the threshold; "measured", any other measured figure (a
share of profiled CPU, memory growth), may be 0 or less, and without spread has no verdict."""


@dataclass(frozen=True)
class Refused:
    """A pair left out of a ratio: which arm ("A" or "B") had an impossible value, and why."""

    position: int
    """Its index in the paired values."""
    arm: Literal["A", "B"]
    value: float
    why: str

    def line(self, arm: str, figure: str) -> str:
        """One line naming the arm and the figure."""
        return f"{arm}'s {figure} {self.value:g} ({self.why}): pair dropped"


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
    kind: Kind = "measured"
    refused: tuple[Refused, ...] = field(default=(), compare=False)
    """Pairs left out for an impossible value (`Kind`): dropped, and counted as dropped."""

    @property
    def point(self) -> float:
        """The estimate the interval is around: exp of the trimmed mean of the paired
        log-ratios (their geometric mean below 10 pairs), the ratio of the sums (a repeat
        measured 0), or the trimmed mean of an absolute figure."""
        if self.scale == "log":
            return math.exp(_estimate([math.log(x / y) for x, y in self.pairs])[0])
        if self.scale == "linear":
            bottom = math.fsum(y for _, y in self.pairs)
            return math.fsum(x for x, _ in self.pairs) / bottom if bottom else math.nan
        return _estimate([x for x, _ in self.pairs])[0]

    @property
    def single_run(self) -> bool:
        return self.runs < 2

    @property
    def defined(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))

    def contains(self, x: float) -> bool:
        return self.low <= x <= self.high

    def at(self, level: float) -> tuple[float, float]:
        """Its bounds at a test's `level` (the (1 - level) interval): the interval a verdict
        at that level used. NaN where there is none (a repeat measured 0)."""
        if self.scale == "linear" or self.single_run:
            return self.low, self.high
        if self.scale == "log":
            low, high = _bounds([math.log(x / y) for x, y in self.pairs], level)
            return math.exp(low), math.exp(high)
        return _bounds([x for x, _ in self.pairs], level)


def _modified_z(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Per row of `x`, each value's distance from the row's median in robust standard
    deviations (0 throughout a row whose median absolute deviation is 0)."""
    mid = np.median(x, axis=1, keepdims=True)
    scale = 1.4826 * np.median(np.abs(x - mid), axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scale > 0, (x - mid) / np.where(scale > 0, scale, 1.0), 0.0)


def _lopsided(x: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
    """Per row of `x` (worlds x n), whether one side has more outliers (`OUTLIER_MADS`) than
    the trimmed test sets aside at each end: the test's estimate then carries one of them, and
    one arm slowed alone in a few repeats would lean the verdict its way. Only where the test
    trims (from 10 pairs): below, Student's t on the mean holds its level with one arm slowed
    by 5 sd in 1 pair of 10 (its spread grows with the outlier), and stays exact for normal
    noise."""
    n = x.shape[1]
    if not trimmed(n):
        return np.zeros(x.shape[0], dtype=bool)
    z = _modified_z(x)
    flagged = np.maximum((z > OUTLIER_MADS).sum(axis=1), (z < -OUTLIER_MADS).sum(axis=1))
    lopsided: npt.NDArray[np.bool_] = flagged > trimmed(n)
    return lopsided


@dataclass(frozen=True)
class Outlier:
    """A pair whose log-ratio lies far outside the others' (`outliers`)."""

    position: int
    """Its index in the interval's pairs."""
    ratio: float
    distance: float
    """Robust standard deviations from the pairs' median log-ratio (above it: positive)."""
    set_aside: bool
    """Whether the trimmed test left it out (one of the `trimmed` most extreme on its side)."""
    trimmed: int = 0
    """Pairs the test set aside at each end."""

    def line(self) -> str:
        side = "above" if self.distance > 0 else "below"
        if self.set_aside:
            fate = "set aside by the trimmed test"
        elif self.trimmed:
            fate = f"more on its side than the {self.trimmed} the test sets aside: no verdict"
        else:
            fate = f"in the test: under {round(1 / TRIM)} pairs it sets none aside"
        return (
            f"pair {self.position + 1} ratio {self.ratio:.3g}, {abs(self.distance):.1f} robust "
            f"sd {side} the median ({fate})"
        )


def outliers(interval: Interval | None) -> tuple[Outlier, ...]:
    """The pairs of a ratio whose log-ratio lies past OUTLIER_MADS robust standard deviations
    from the median (one arm slowed or sped alone in that repeat, as a background burst on a
    shared machine does), for the report beside the verdict. None looked for below
    OUTLIERS_FROM pairs, without spread, or where there is no log-ratio (a repeat measured 0)."""
    if interval is None or interval.scale != "log" or len(interval.pairs) < OUTLIERS_FROM:
        return ()
    r = np.log([[x / y for x, y in interval.pairs]])
    z = _modified_z(r)[0]
    n, g = r.shape[1], trimmed(r.shape[1])
    rank = np.empty(n, dtype=int)
    rank[np.argsort(r[0], kind="stable")] = np.arange(n)
    return tuple(
        Outlier(i, math.exp(float(r[0, i])), float(z[i]), bool(rank[i] < g or rank[i] >= n - g), g)
        for i in range(n)
        if abs(z[i]) > OUTLIER_MADS
    )


def outliers_text(interval: Interval | None) -> str:
    """`outliers` in one clause ("" when there are none): "outliers: pair 7 ratio 1.42, ..."."""
    found = outliers(interval)
    return "outliers: " + "; ".join(o.line() for o in found) if found else ""


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def min_max(values: Sequence[float]) -> tuple[float, float]:
    return (min(values), max(values)) if values else (math.nan, math.nan)


@functools.cache
def _t(df: float, q: float = 1 - ALPHA / 2) -> float:
    return float(stats.t.ppf(q, df))


def _mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value)."""
    n = len(values)
    m = math.fsum(values) / n
    return m, math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0


def trimmed(n: int) -> int:
    """Pairs set aside at each end of `n` before the test."""
    return int(TRIM * n)


def _trimmed_t(
    x: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], float]:
    """Per row of `x` (worlds x n, n >= 2): the trimmed mean, its standard error and the
    degrees of freedom of its t (with nothing trimmed: the mean, Student's s / sqrt(n) and
    n - 1)."""
    n = x.shape[1]
    g = trimmed(n)
    kept = n - 2 * g
    s = np.sort(x, axis=1)
    m = s[:, g : n - g].mean(axis=1)
    winsorised = np.clip(s, s[:, [g]], s[:, [n - g - 1]])
    se = winsorised.std(axis=1, ddof=1) / (kept / n * math.sqrt(n))
    return m, se, kept - 1 - DF_PER_TRIMMED * g


def _estimate(values: Sequence[float]) -> tuple[float, float, float]:
    """(trimmed mean, its standard error, degrees of freedom) of one sample; the value, 0 and
    0 for one value."""
    if len(values) < 2:
        return values[0], 0.0, 0.0
    m, se, df = _trimmed_t(np.asarray([values], dtype=float))
    return float(m[0]), float(se[0]), df


def _bounds(values: Sequence[float], level: float = ALPHA) -> tuple[float, float]:
    """The (1 - level) interval of the trimmed mean (the point when there is no spread)."""
    m, se, df = _estimate(values)
    if se == 0:
        return m, m
    half = _t(df, 1 - level / 2) * se
    return m - half, m + half


def _why_refused(value: float, kind: Kind) -> str:
    """Why a value cannot be judged ("" when it can)."""
    if value != value:
        return "missing"
    if math.isinf(value):
        return "infinite"
    if kind == "cost" and value <= 0:
        return "a cost cannot be 0 or less"
    return ""


def split(
    a: Sequence[float], b: Sequence[float], kind: Kind = "measured"
) -> tuple[list[tuple[float, float]], list[Refused]]:
    """The pairs (a[i], b[i]) a ratio can be formed from, and those refused (`Kind`)."""
    if len(a) != len(b):
        raise ValueError(f"unpaired repeats: {len(a)} A values, {len(b)} B values")
    pairs, refused = [], []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        x, y = float(x), float(y)
        side: Literal["A", "B"]
        for side, v in (("A", x), ("B", y)):
            if why := _why_refused(v, kind):
                refused.append(Refused(i, side, v, why))
                break
        else:
            pairs.append((x, y))
    return pairs, refused


def ratio_interval(
    a: Sequence[float], b: Sequence[float], kind: Kind = "measured"
) -> Interval | None:
    """Interval of the A/B ratio from repeats paired by position (a[i] and b[i] ran in the
    same repeat; pass `paired` output when arms may be missing), pairs with an impossible
    value refused (`split`). None when no pair is left or B is 0 in every one."""
    pairs, refused = split(a, b, kind)
    if not pairs or all(y == 0 for _, y in pairs):
        return None
    kept, why = tuple(pairs), tuple(refused)
    if all(x > 0 and y > 0 for x, y in pairs):
        low, high = _bounds([math.log(x / y) for x, y in pairs])
        return Interval(math.exp(low), math.exp(high), len(pairs), kept, "log", kind, why)
    if len(pairs) == 1:
        x, y = pairs[0]
        point = x / y if y else math.nan
        return Interval(point, point, 1, kept, "linear", kind, why)
    return Interval(math.nan, math.nan, len(pairs), kept, "linear", kind, why)


def mean_interval(values: Sequence[float], kind: Kind = "measured") -> Interval | None:
    """The interval of one arm's trimmed mean (an absolute figure); missing and infinite
    values left out."""
    pairs, refused = split(values, [1.0] * len(values), kind)
    if not pairs:
        return None
    clean = [x for x, _ in pairs]
    low, high = _bounds(clean)
    return Interval(low, high, len(clean), tuple(pairs), "absolute", kind, tuple(refused))


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


def decisions(
    d: npt.ArrayLike, level: float = ALPHA, *, exact: bool = False
) -> npt.NDArray[np.int8]:
    """Per row of `d` (worlds x repeats: the differences from the threshold), +1 when the
    two-sided trimmed t-test at `level` puts the trimmed mean above 0, -1 below, 0 when it
    cannot tell. The (1 - level) interval excludes 0 exactly then, so this is also "the
    interval strictly past the threshold", except that a row with more outliers on one side
    than the test sets aside (`_lopsided`) does not decide: that is what keeps one arm slowed
    alone in 1 pair of 10 within the 5 %. Every verdict is made here, one world or 20,000
    at once (the calibration test). A row without spread decides by its sign only when
    `exact` (a count: 0 when on the threshold), else not at all (a measured figure the
    same in every repeat is not known to be exact); a level of 0 (before a design's first
    look) never decides."""
    x = np.atleast_2d(np.asarray(d, dtype=float))
    n = x.shape[1]
    out = np.zeros(x.shape[0], dtype=np.int8)
    if n < 2 or level <= 0:
        return out
    m, se, df = _trimmed_t(x)
    half = _t(df, 1 - level / 2) * se
    out[m - half > 0] = 1
    out[m + half < 0] = -1
    out[_lopsided(x)] = 0
    flat = se == 0
    out[flat] = np.sign(m[flat]).astype(np.int8) if exact else 0
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
    share of it: `experiment.plan.design`) is significant and the interval lies on the good side
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
    exact = interval.kind == "count"
    if sd == 0 and not exact:
        return "inconclusive (the same in every repeat: no spread to judge a measured figure by)"
    way = int(decisions([d], level, exact=exact)[0])
    if way:
        return "met" if (way > 0) == at_least else "missed"
    pairs, detect_level = detect_at or (len(d) + pairs_left, level)
    detect = _detect_text(interval, threshold, pairs, detect_level)
    if level <= 0:
        return "inconclusive (before the design's first look" + (f"; {detect})" if detect else ")")
    if _lopsided(np.asarray([d], dtype=float))[0]:
        return f"inconclusive ({_lopsided_text(d)}" + (f"; {detect})" if detect else ")")
    return f"inconclusive ({detect})" if detect else "inconclusive"


def _lopsided_text(d: Sequence[float]) -> str:
    """Why `_lopsided` withholds the verdict on the differences `d`, in one clause."""
    z = _modified_z(np.asarray([d], dtype=float))[0]
    above, below = int((z > OUTLIER_MADS).sum()), int((z < -OUTLIER_MADS).sum())
    count, side = (above, "above") if above >= below else (below, "below")
    g = trimmed(len(d))
    return (
        f"{count} outlier pair{'s' if count != 1 else ''} {side} the median, more than the "
        f"{g} the test sets aside at each end: no verdict while one arm may have been slowed "
        "alone"
    )


def is_verdict(text: str) -> bool:
    """Whether a verdict string is a verdict (met or missed), not an observation."""
    return text in ("met", "missed")


def confidence(level: float = ALPHA) -> str:
    """The confidence of the interval a test at `level` uses: "95 %" at ALPHA, "99.77 %" at
    a sequential look's 0.0023 (95 % where no verdict is taken: a level of 0)."""
    return f"{100 * (1 - (level if level > 0 else ALPHA)):.4g} %"


def describe(
    interval: Interval | None,
    fmt: Callable[[float], str] = "{:.3g}".format,
    level: float = ALPHA,
) -> str:
    """`[low, high]` at `level` (the interval a verdict at that level used; `confidence`
    names it), said to be exact (a count) or without spread where every repeat gave the same;
    the point and "1 repeat"; or why there is none."""
    if interval is None:
        return "-"
    if interval.single_run:
        return f"{fmt(interval.low)} (1 repeat)" if interval.defined else "- (1 repeat)"
    if not interval.defined:
        return "- (a repeat measured 0: tested on differences)"
    low, high = interval.at(level if level > 0 else ALPHA)
    if low == high:
        # No spread: exact only where the figure is a count; a measured one is not judged.
        return f"[{fmt(low)}, {fmt(high)}] " + (
            "exact" if interval.kind == "count" else "no spread"
        )
    return f"[{fmt(low)}, {fmt(high)}]"
