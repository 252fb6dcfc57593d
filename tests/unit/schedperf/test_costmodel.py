"""The cost model: nodes filtered per pod, slices visited per node, and the crossover."""

from __future__ import annotations

import pytest

from schedperf import costmodel as m


@pytest.mark.parametrize(
    ("nodes", "found"),
    [
        (50, 50),  # under 100 nodes every node is checked
        (100, 100),
        (200, 100),  # 49 % of 200 is 98: the 100-node floor
        (500, 230),  # 46 %
        (1000, 420),  # 42 %
        (3000, 780),  # 26 %
        (5000, 500),  # 10 %: FACTS §1's example
        (6000, 300),  # 50 - 48 = 2 %, raised to the 5 % floor
    ],
)
def test_adaptive_nodes_to_find(nodes: int, found: int) -> None:
    assert m.nodes_to_find(nodes) == found


def test_a_set_percentage_and_its_floor() -> None:
    assert m.nodes_to_find(1000, 30) == 300
    assert m.nodes_to_find(1000, 5) == 100
    assert m.nodes_to_find(1000, 100) == 1000
    with pytest.raises(ValueError):
        m.nodes_to_find(1000, 101)


def test_a_fuller_fleet_filters_more_nodes_never_more_than_all() -> None:
    assert m.nodes_filtered(1000) == 420
    assert m.nodes_filtered(1000, 0.5) == 840
    assert m.nodes_filtered(1000, 0.9) == 1000
    assert m.nodes_filtered(1000, 1.0) == 1000
    with pytest.raises(ValueError):
        m.nodes_filtered(1000, 1.5)


def test_slices_scanned_per_release() -> None:
    plain = m.Fleet(1000)
    assert [m.slices_scanned(r, plain) for r in m.RELEASES] == [1000, 1, 1]
    # 2 counter-set slices per node (MIG), one plain slice per node, 3 network slices.
    mig = m.Fleet(1000, slices_per_node=1, counter_slices_per_node=2, shared_slices=3)
    assert mig.slices == 3003
    assert m.slices_scanned("1.35", mig) == 3003
    assert m.slices_scanned("1.36", mig) == 6 + 2 * 999  # #138917: every node's counters
    assert m.slices_scanned("1.37", mig) == 6
    with pytest.raises(ValueError, match=r"1\.35"):
        m.slices_scanned("1.34", plain)


def test_work_per_pod_follows_the_filtered_nodes() -> None:
    costs = m.Costs(per_pod=5.0, per_node=1.0, per_visit=0.01)
    # 1.37: 420 nodes x (1 + 1 x 0.01) + 5
    assert m.work_per_pod("1.37", m.Fleet(1000), costs) == pytest.approx(5 + 420 * 1.01)
    # 1.35 at 5,000 nodes: fewer nodes filtered than at 3,000, but 5,000 slices each.
    assert m.work_per_pod("1.35", m.Fleet(5000), costs) == pytest.approx(5 + 500 * 51)
    # The adaptive rule makes 1.37's cost fall from 3,000 to 5,000 nodes.
    assert m.work_per_pod("1.37", m.Fleet(5000), costs) < m.work_per_pod(
        "1.37", m.Fleet(3000), costs
    )


def test_crossover_where_the_visits_pay_back_the_base() -> None:
    c35 = m.Costs(per_pod=0.0, per_node=1.0, per_visit=0.001)
    c36 = m.Costs(per_pod=0.0, per_node=1.5, per_visit=0.001)
    # 1 + 0.001 n >= 1.5 + 0.001 from n = 501.
    assert m.crossover(("1.35", c35), ("1.36", c36)) == 501
    assert m.crossover(("1.35", c35), ("1.36", c36), max_nodes=400) is None
    assert m.crossover(("1.35", c36), ("1.36", c35)) == 1


def test_the_published_prediction() -> None:
    low, high = m.PREDICTION.crossover_range()
    assert (low, high) == (391, 1561)
    assert low < high
