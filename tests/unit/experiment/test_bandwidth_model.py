import pytest

from experiment.measure import bandwidth_model as bw


def test_all_aligned_earns_the_published_aligned_figure() -> None:
    p = bw.payoff(8, 8)
    assert p.mean_gbps == pytest.approx(46.59)
    assert p.share_of_ceiling == pytest.approx(1.0)


def test_unaligned_gpus_earn_the_unaligned_figure_and_mixes_average() -> None:
    assert bw.payoff(0, 8).mean_gbps == pytest.approx(29.20)
    assert bw.payoff(4, 8).mean_gbps == pytest.approx((46.59 + 29.20) / 2)
    assert bw.payoff(0, 8, "all_reduce").share_of_ceiling == pytest.approx(29.68 / 46.93)


def test_the_published_gain_is_about_sixty_percent() -> None:
    aligned, unaligned = bw.PUBLISHED_BUS_BANDWIDTH["all_gather"]
    assert aligned / unaligned - 1 == pytest.approx(0.596, abs=0.001)


def test_impossible_counts_are_rejected() -> None:
    with pytest.raises(ValueError, match="aligned_gpus=9"):
        bw.payoff(9, 8)
