"""plan: open-loop arrival offsets and wave sizes."""

from __future__ import annotations

import itertools

import pytest

from loadgen import plan


def test_fixed_rate_spaces_objects_evenly() -> None:
    assert plan.offsets(4, 2.0, "fixed") == [0.0, 0.5, 1.0, 1.5]


def test_poisson_is_seeded_non_decreasing_and_near_the_rate() -> None:
    a = plan.offsets(5000, 100.0, "poisson", seed=7)
    assert a == plan.offsets(5000, 100.0, "poisson", seed=7)
    assert a is not None
    assert a[0] == 0.0 and all(x <= y for x, y in itertools.pairwise(a))
    assert 45.0 < a[-1] < 55.0  # 4999 gaps of mean 10 ms


def test_closed_loop_has_no_schedule() -> None:
    assert plan.offsets(10, 5.0, "closed") is None


def test_unlimited_rate_creates_everything_at_once() -> None:
    assert plan.offsets(3, 0.0, "fixed") == [0.0, 0.0, 0.0]


def test_waves_cover_the_total_with_a_short_last_wave() -> None:
    assert plan.waves(10, 4) == [4, 4, 2]
    assert plan.waves(8, 4) == [4, 4]
    with pytest.raises(ValueError):
        plan.waves(8, 0)
