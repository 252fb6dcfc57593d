"""How many paired repeats a comparison runs, and at which level each verdict is taken (pure).

Fixed: every repeat the file asks for runs, and the verdicts are taken once, at the end, at
`intervals.ALPHA`. Sequential (`design: sequential`): pairs run until every headline target is
decided or the budget ends (its minutes, or `repeats`, the most pairs). Verdicts are taken only
at planned looks, after FIRST_LOOK pairs and then each about GROWTH times the pairs of the one
before, the last at the most pairs. The error budget ALPHA is spent over the looks by
Lan-DeMets' O'Brien-Fleming-type spending function of the information fraction t = n / max
pairs, alpha(t) = 2 - 2 Phi(z_{1 - ALPHA/2} / sqrt(t)): look k tests at alpha(t_k) -
alpha(t_{k-1}). When the time budget cannot reach the next planned look, the run goes on while
a pair still fits and then takes a closing look (`closes`, `closed`), which tests at all of
ALPHA not yet spent: what a spending function allows when a trial ends early for reasons
that are not its data (here the machine's pace, not the figures' values). An interrupted run
(Ctrl-C) is judged the same way, as a closing look on the pairs it ran: judged at the last
look's share instead, the pairs since would spend that share a second time. A closing look
before the first planned look's pairs (`fewest`) takes no verdict: its few degrees of freedom
cannot carry one at a share of ALPHA. The levels sum to
ALPHA either way, so whichever looks a run reaches and whenever it stops, the chance of a
false verdict (met or missed where the truth sits on the threshold), counting every look, is
at most ALPHA (the union bound: exact, with no assumption about how the looks' statistics are
correlated, and each look is the same trimmed t-test, `intervals.decisions`, on the pairs
there are). The price
is conservatism: a group-sequential boundary fitted to the joint normal law would spend the
same ALPHA with more power, but only approximately for Student's t at a handful of pairs,
which is where this project decides.

Why O'Brien-Fleming-type, and few looks: it keeps almost all of ALPHA for the later looks, so
a difference near the threshold (the extender's overhead sits near 10 %) keeps nearly the power
of a fixed design at the most pairs, while a clear one still stops early; with few looks, each
share is worth testing at. Why the closing look: without it, a machine slower than planned
spends nothing of what the looks it cannot reach hold, and the budget's last minutes run
pairs no look uses. On the repeats of a recorded quiet run of the built-in comparisons
(`bench/sequential_demo.py`; docs/results/narrative/, entry "The sequential default") the
default's 24 pairs with a closing look decided both headline targets in 99 % of simulated runs
at its 34 s a pair and 93 % at 60 s; 16 pairs without one, 95 % at any pace that reaches 16.
Power-family spending (t^2, t^3) did within 2 points of this one.
`tests/unit/experiment/test_calibration.py` checks the false-verdict rate over 20,000 worlds, a
closing look included.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

from experiment.measure import intervals
from experiment.spec.spec import Experiment

FIRST_LOOK = 4
"""Pairs before the first look: below it Student's t has too few degrees of freedom to
decide at a share of ALPHA."""
GROWTH = 1.6
"""Each look comes after about this many times the pairs of the one before: few looks, each
with a share worth testing at (24 pairs: after 4, 6, 10, 16 and 24)."""
SPENDING = "Lan-DeMets O'Brien-Fleming-type alpha spending"


@functools.cache
def _z(q: float) -> float:
    return float(stats.norm.ppf(q))


@dataclass(frozen=True)
class Design:
    max_pairs: int
    """The most paired repeats (the file's `repeats`)."""
    sequential: bool = False
    alpha: float = intervals.ALPHA
    closed_at: int | None = None
    """The pairs of a closing look the time budget forced before `max_pairs` (`closed`)."""

    @property
    def looks(self) -> tuple[int, ...]:
        """The pairs after which verdicts are taken, the last at `max_pairs` (or at the
        closing look). Fixed: one look, at the end."""
        n, out = FIRST_LOOK, []
        if self.sequential:
            while n <= self.max_pairs - 2:
                out.append(n)
                n = max(n + 1, round(n * GROWTH))
        if self.closed_at is not None:
            before = tuple(k for k in out if k < self.closed_at)
            # A closing look before the first planned one has too few pairs for a verdict.
            return (*before, self.closed_at) if self.closed_at >= self.fewest else before
        return (*out, self.max_pairs)

    @property
    def fewest(self) -> int:
        """The fewest pairs a verdict is taken on: the first planned look's (FIRST_LOOK, or
        every pair of a design of fewer). Fewer, as a budget's or an interrupt's closing
        look may leave, give observations only."""
        return min(FIRST_LOOK, self.max_pairs)

    def spent(self, pairs: int) -> float:
        """ALPHA spent by the look at `pairs` pairs and those before it (all of it from a
        closing look on)."""
        if self.closed_at is not None and pairs >= self.closed_at:
            return self.alpha
        t = min(1.0, pairs / self.max_pairs)
        if t <= 0:
            return 0.0
        return 2 - 2 * float(stats.norm.cdf(_z(1 - self.alpha / 2) / math.sqrt(t)))

    def closes(self, pairs: int, elapsed: float, pair_seconds: float, budget: float) -> bool:
        """Whether a sequential run after `pairs` pairs, `elapsed` of its `budget` seconds
        spent at `pair_seconds` a pair, takes its closing look now: the next planned look is
        out of the budget's reach and so is one more pair."""
        upcoming = self.next_look(pairs)
        return (
            self.sequential
            and upcoming is not None
            and elapsed + (upcoming - pairs) * pair_seconds > budget
            and elapsed + pair_seconds > budget
        )

    def closed(self, pairs: int) -> Design:
        """This design with its closing look after `pairs` pairs."""
        return dataclasses.replace(self, closed_at=pairs)

    def within(self, budget: float, setup: float, pair_seconds: float) -> Design:
        """The design a run follows whose set-up takes `setup` and each pair `pair_seconds`
        of its `budget` seconds: closed where `closes` would close it (the simulation's
        counterpart of the runner's check after every pair)."""
        for pairs in range(1, self.max_pairs):
            if self.closes(pairs, setup + pairs * pair_seconds, pair_seconds, budget):
                return self.closed(pairs)
        return self

    def look_at(self, pairs: int) -> int | None:
        """The last look a run of `pairs` completed pairs has reached; None before the first."""
        reached = [n for n in self.looks if n <= pairs]
        return reached[-1] if reached else None

    def level(self, pairs: int) -> float:
        """The test level of a verdict after `pairs` pairs: ALPHA for a fixed design; the
        share of the last look reached for a sequential one (0 before its first look, and
        below `fewest` pairs for either)."""
        if pairs < self.fewest:
            return 0.0
        if not self.sequential:
            return self.alpha
        look = self.look_at(pairs)
        if look is None:
            return 0.0
        i = self.looks.index(look)
        before = self.looks[i - 1] if i else 0
        return self.spent(look) - self.spent(before)

    def next_look(self, pairs: int) -> int | None:
        """The first look after `pairs` completed pairs; None past the last."""
        return next((n for n in self.looks if n > pairs), None)

    def describe(self) -> str:
        if not self.sequential:
            return f"fixed: {self.max_pairs} paired repeats, verdicts at p < {self.alpha:g}"
        if not self.looks:
            return (
                f"sequential, closed after {self.closed_at} pairs, before the first look "
                f"after {self.fewest}: observations only, no verdict"
            )
        shares = ", ".join(f"{n} ({self.level(n):.2g})" for n in self.looks)
        closing = (
            ", the last a closing look (the budget reached no further; it spends what was left)"
            if self.closed_at is not None
            else ""
        )
        return (
            f"sequential: looks after {shares} pairs (each with its test level){closing}, "
            f"{SPENDING} of {self.alpha:g} over at most {self.max_pairs} pairs: at most "
            f"{self.alpha:.0%} false verdicts per target, counting every look"
        )


def first_decisions(
    d: npt.NDArray[np.float64], design: Design
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int64]]:
    """Per world (a row of `d`: its pairs' differences from the threshold, as many as the
    design's last look), the first look's decision (+1, -1, 0 when no look decided) and the
    pairs it took (max_pairs + 1 when undecided): the sequential rule the runner follows, for the
    calibration test and the budget simulation."""
    worlds = d.shape[0]
    way = np.zeros(worlds, dtype=np.int8)
    when = np.full(worlds, design.max_pairs + 1, dtype=np.int64)
    for n in design.looks:
        open_ = way == 0
        got = intervals.decisions(d[open_, :n], design.level(n))
        idx = np.flatnonzero(open_)[got != 0]
        way[idx] = got[got != 0]
        when[idx] = n
    return way, when


def of(exp: Experiment, closed_at: int | None = None) -> Design:
    """The design an experiment file asks for (`design:`, `repeats:` the most pairs), closed
    after `closed_at` pairs where the budget forced a closing look."""
    return Design(exp.repeats, exp.design == "sequential", closed_at=closed_at)
