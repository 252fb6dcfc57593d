"""The sequential design's closing look: where the time budget can reach neither the next
planned look nor one more pair, the run closes there and spends what the looks before left."""

from __future__ import annotations

import pytest

from experiment.measure import intervals
from experiment.plan import design

DEMO = design.Design(24, sequential=True)
BUDGET = 900.0


def test_the_demos_looks_grow_from_the_first_to_the_most_pairs() -> None:
    assert DEMO.looks == (4, 6, 10, 16, 24)


def test_a_pair_that_still_fits_runs_before_the_closing_look() -> None:
    # 50 s a pair, 9 s of set-up: 16 pairs end at 809 s, the look at 24 is out of reach, but
    # a 17th pair ends at 859 s; after it an 18th would end past 900 s.
    assert not DEMO.closes(16, 809.0, 50.0, BUDGET)
    assert DEMO.closes(17, 859.0, 50.0, BUDGET)
    assert DEMO.within(BUDGET, 9.0, 50.0) == DEMO.closed(17)


def test_a_machine_that_reaches_the_last_look_never_closes() -> None:
    assert DEMO.within(BUDGET, 9.0, 34.0) == DEMO
    assert not design.Design(5).closes(2, 899.0, 100.0, BUDGET)


def test_the_closing_look_spends_what_the_looks_before_it_left() -> None:
    closed = DEMO.closed(17)
    assert closed.looks == (4, 6, 10, 16, 17)
    assert closed.level(17) == pytest.approx(intervals.ALPHA - DEMO.spent(16))
    assert closed.level(10) == DEMO.level(10)
    assert "closing look" in closed.describe() and "closing look" not in DEMO.describe()


def test_a_closing_look_on_a_planned_one_takes_its_place() -> None:
    closed = DEMO.closed(16)
    assert closed.looks == (4, 6, 10, 16)
    assert closed.level(16) == pytest.approx(intervals.ALPHA - DEMO.spent(10))


def test_a_budget_short_of_the_first_look_gives_observations_only() -> None:
    # The loaded machine's 239 s a pair: 3 pairs in 15 minutes, fewer than the first look's 4.
    closed = DEMO.within(BUDGET, 60.0, 239.0)
    assert closed.closed_at == 3 and closed.looks == ()
    assert closed.level(3) == closed.level(4) == 0.0
    assert "observations only" in closed.describe()


def test_an_interrupted_run_spends_no_share_twice() -> None:
    # Interrupted after 12 pairs, the look at 10 taken: the pairs are judged once more, at
    # what the looks up to 10 left, never again at the look at 10's share.
    interrupted = DEMO.closed(12)
    assert interrupted.looks == (4, 6, 10, 12)
    assert interrupted.level(12) == pytest.approx(intervals.ALPHA - DEMO.spent(10))
    assert sum(interrupted.level(n) for n in interrupted.looks) == pytest.approx(intervals.ALPHA)


def test_a_fixed_design_judges_from_its_first_look_s_pairs() -> None:
    assert design.Design(5).level(4) == intervals.ALPHA and design.Design(5).level(3) == 0.0
    assert design.Design(3).level(3) == intervals.ALPHA and design.Design(3).level(2) == 0.0
