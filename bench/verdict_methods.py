"""Which paired test the verdicts use: false verdicts and power of candidate tests by simulation
(no cluster; issue 55).

Every candidate judges the per-pair log-ratios' differences from log(threshold), two-sided at
a look's level, through the sequential rule of `experiment.plan.design` (`first_decisions`, with the
candidate in place of `intervals.decisions`):

- `student`: Student's t on the mean (the method before issue 55);
- `trimmed-only`: the 10 % lowest and highest set aside from 10 pairs on, winsorised spread,
  n - 2g - 1 - DF_PER_TRIMMED x g degrees of freedom (the method of 532baff);
- `trimmed` (the method `experiment.measure.intervals.decisions` uses): `trimmed-only`, and no
  verdict where one side has more outliers (past OUTLIER_MADS robust sd of the median) than the
  test sets aside;
- `trimmed-tm`: `trimmed-only` with Tukey and McLaughlin's n - 2g - 1;
- `trimmed-20`: 20 % set aside at each end from 5 pairs on (Tukey and McLaughlin's degrees of
  freedom);
- `wilcoxon`: Wilcoxon's signed ranks, exact null distribution;
- `mad-drop`: the pairs past 3.5 MADs of the median dropped, Student's t on the rest.

Noise, shaped like the calibration test's (`tests/unit/experiment/test_calibration.py`): a load
factor per repeat both arms share unequally, per-arm normal (`normal`) or t3 (`t3`) noise, slow
arms on either side (`outliers`: symmetric), and one arm alone slowed by K standard deviations
of the log-ratio in 1 pair of 10 (`one-sided-K`). The truth sits on the threshold, so every
verdict is false. Designs: the default demo's 24 pairs with every planned look (`planned`), the
same closed by the time budget after 5, 8, 13 and 20 pairs, and fixed designs of 8, 16 and 24
pairs. Power: a true 1.134 against 1.10 at a log-ratio spread of 0.028 (the quiet machine's CPU
per pod), the demo's design within its 15-minute budget at 34, 60 and 74 s a pair (9 s set-up),
clean and with one arm's bursts (5 sd in 1 pair of 10) pulling the ratio toward the threshold.

    .venv/bin/python bench/verdict_methods.py [--worlds 200000] [--seed 55] [--output FILE]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from experiment.measure import intervals
from experiment.plan import design

Array = npt.NDArray[np.float64]
Test = Callable[[Array, float], npt.NDArray[np.int8]]

THRESHOLD = 1.10
LOAD, LOAD_GAIN, SPREAD, SLOW_SHARE = 0.25, (1.0, 0.8), 0.1, 0.1
DEMO = design.Design(24, sequential=True)
PLANS = {
    "planned": DEMO,
    **{f"closed after {n}": DEMO.closed(n) for n in (5, 8, 13, 20)},
    **{f"fixed {n}": design.Design(n) for n in (8, 16, 24)},
}
NOISES = ("normal", "t3", "outliers", "one-sided-5", "one-sided-3")


def _t_test(m: Array, se: Array, df: Array | float, level: float) -> npt.NDArray[np.int8]:
    half = stats.t.ppf(1 - level / 2, df) * se
    out = np.zeros(m.shape, dtype=np.int8)
    with np.errstate(invalid="ignore"):
        out[m - half > 0] = 1
        out[m + half < 0] = -1
    out[~(se > 0)] = 0
    return out


def student(x: Array, level: float) -> npt.NDArray[np.int8]:
    n = x.shape[1]
    return _t_test(x.mean(axis=1), x.std(axis=1, ddof=1) / math.sqrt(n), n - 1, level)


def _trimmed(share: float, from_n: int, df_per_trimmed: int) -> Test:
    def test(x: Array, level: float) -> npt.NDArray[np.int8]:
        n = x.shape[1]
        g = int(share * n) if n >= from_n else 0
        kept = n - 2 * g
        s = np.sort(x, axis=1)
        m = s[:, g : n - g].mean(axis=1)
        w = np.clip(s, s[:, [g]], s[:, [n - g - 1]])
        se = w.std(axis=1, ddof=1) / (kept / n * math.sqrt(n))
        return _t_test(m, se, kept - 1 - df_per_trimmed * g, level)

    return test


@functools.cache
def _signed_rank_null(n: int) -> npt.NDArray[np.float64]:
    """P(W+ <= w) for w = 0 .. n(n+1)/2 under the null (exact, by counting subsets)."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1
    for k in range(1, n + 1):
        counts[k:] = counts[k:] + counts[:-k].copy()
    return np.cumsum(counts) / 2.0**n


def wilcoxon(x: Array, level: float) -> npt.NDArray[np.int8]:
    n = x.shape[1]
    ranks = np.argsort(np.argsort(np.abs(x), axis=1), axis=1) + 1
    w_plus = np.where(x > 0, ranks, 0).sum(axis=1)
    cdf = _signed_rank_null(n)
    # The largest c with P(W <= c) <= level / 2 (none: this n cannot reject at this level).
    c = int(np.searchsorted(cdf, level / 2, side="right")) - 1
    out = np.zeros(x.shape[0], dtype=np.int8)
    if c >= 0:
        total = n * (n + 1) // 2
        out[w_plus >= total - c] = 1
        out[w_plus <= c] = -1
    return out


def mad_drop(x: Array, level: float, cut: float = 3.5) -> npt.NDArray[np.int8]:
    med = np.median(x, axis=1, keepdims=True)
    mad = 1.4826 * np.median(np.abs(x - med), axis=1, keepdims=True)
    keep = np.abs(x - med) <= cut * np.maximum(mad, 1e-300)
    k = keep.sum(axis=1)
    xs = np.where(keep, x, 0.0)
    m = xs.sum(axis=1) / k
    var = (np.where(keep, x - m[:, None], 0.0) ** 2).sum(axis=1) / np.maximum(k - 1, 1)
    se = np.where(k >= 2, np.sqrt(var / k), 0.0)
    return _t_test(m, se, np.maximum(k - 1, 1), level)


METHODS: dict[str, Test] = {
    "student": student,
    "trimmed-only": _trimmed(intervals.TRIM, 10, intervals.DF_PER_TRIMMED),
    "trimmed": lambda x, level: intervals.decisions(x, level),
    "trimmed-tm": _trimmed(intervals.TRIM, 10, 0),
    "trimmed-20": _trimmed(0.2, 5, 0),
    "wilcoxon": wilcoxon,
    "mad-drop": mad_drop,
}


def first_decisions(d: Array, plan: design.Design, test: Test) -> npt.NDArray[np.int8]:
    """`design.first_decisions` with `test` in place of `intervals.decisions`."""
    way = np.zeros(d.shape[0], dtype=np.int8)
    for n in plan.looks:
        open_ = np.flatnonzero(way == 0)
        got = test(d[open_, :n], plan.level(n))
        way[open_[got != 0]] = got[got != 0]
    return way


def log_ratios(rng: np.random.Generator, noise: str, worlds: int, n: int) -> Array:
    """worlds x n per-pair log(A/B) - log(threshold), the truth on the threshold."""
    load = rng.normal(0.0, LOAD, (worlds, n))
    arms = []
    for gain in LOAD_GAIN:
        own = rng.standard_t(3, (worlds, n)) if noise == "t3" else rng.normal(size=(worlds, n))
        x = gain * load + SPREAD * own
        if noise == "outliers":
            slow = rng.random((worlds, n)) < SLOW_SHARE
            x += slow * np.log(rng.uniform(1.5, 2.5, (worlds, n)))
        arms.append(x)
    if noise.startswith("one-sided-"):
        k = float(noise.rsplit("-", 1)[1])
        sd = math.hypot(LOAD * (LOAD_GAIN[0] - LOAD_GAIN[1]), math.sqrt(2) * SPREAD)
        arms[1] += (rng.random((worlds, n)) < SLOW_SHARE) * k * sd
    return arms[0] - arms[1]


def power(
    rng: np.random.Generator, worlds: int, pair_seconds: float, contaminated: bool
) -> dict[str, Any]:
    """Share of simulated default demos deciding a true 1.134 (sd 0.028) per method."""
    plan = DEMO.within(900.0, 9.0, pair_seconds)
    n = plan.looks[-1]
    d = rng.normal(math.log(1.134 / THRESHOLD), 0.028, (worlds, n))
    if contaminated:
        d -= (rng.random((worlds, n)) < SLOW_SHARE) * 5 * 0.028
    return {
        "looks": list(plan.looks),
        **{name: float((first_decisions(d, plan, t) == 1).mean()) for name, t in METHODS.items()},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worlds", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=55)
    ap.add_argument("--output", type=Path)
    args = ap.parse_args(argv)
    started = time.monotonic()
    out: dict[str, Any] = {
        "worlds": args.worlds,
        "seed": args.seed,
        "false_verdicts": {},
        "power": {},
    }
    names = list(METHODS)
    print(f"false verdicts, truth on {THRESHOLD}, {args.worlds:,} worlds a cell")
    for noise in NOISES:
        print(f"\n{noise:<18}" + "".join(f"{m:>14}" for m in names))
        for label, plan in PLANS.items():
            rng = np.random.default_rng(
                [args.seed, NOISES.index(noise), len(plan.looks), plan.looks[-1]]
            )
            d = log_ratios(rng, noise, args.worlds, plan.looks[-1])
            rates = {
                m: float((first_decisions(d, plan, t) != 0).mean()) for m, t in METHODS.items()
            }
            out["false_verdicts"].setdefault(noise, {})[label] = rates
            print(f"{label:<18}" + "".join(f"{rates[m]:>14.2%}" for m in names))
    print(f"\npower: a true 1.134 against {THRESHOLD} at sd 0.028, the default demo in 15 min")
    rng = np.random.default_rng([args.seed, 1134])
    for pace in (34.0, 60.0, 74.0):
        for contaminated in (False, True):
            label = f"{pace:g} s a pair" + (", one-sided 5 sd" if contaminated else "")
            row = power(rng, args.worlds, pace, contaminated)
            out["power"][label] = row
            print(
                f"{label:<30} looks {row['looks']}: "
                + ", ".join(f"{m} {row[m]:.2%}" for m in names)
            )
    out["seconds"] = round(time.monotonic() - started, 1)
    print(f"\n{out['seconds']} s")
    if args.output:
        args.output.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
